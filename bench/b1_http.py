"""B1 HTTP: wrk against the web server (production settings), scenarios S1..S4.

200 chains with real store codes. Each chain's five standard filters are
submitted once before the runs (the Monday-morning panel); no cluster runs, so
every job stays `pendente` and a repeat is a dedup hit answered with 202.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ambiente import (
    SAIDA,
    Banco,
    MedidorCpu,
    Perfil,
    Processo,
    formatar_cpu,
    garantir_wrk,
    iniciar_web,
    pedir_vendas,
    pids_do_banco,
)
from bench.contexto import Contexto, linha, nota
from bench.par import iniciar_par
from bench.preparo import TenantDeBench

LUA = Path(__file__).resolve().parent / "lua" / "relatorios.lua"
NOMES = {
    "s1": "S1 dedup-hot",
    "s2": "S2 all-new",
    "s3": "S3 status",
    "s4": "S4 mixed",
}
# The per-tenant pending cap would turn all-new traffic into 429s: this
# figure is about the submit path, not about the cap.
SEM_LIMITE = str(10**9)
# Issue 11's targets: our throughput over the seed peer's, in one run.
PAR = "seed peer"
ALVOS = {"s1": "0.8", "s2": "0.5", "s3": "1.0", "s4": "0.8"}


@dataclass
class Lado:
    """One server under the same load: relatorios, or the seed peer."""

    rotulo: str  # the server (variant) measured, or PAR
    nome: str  # the CPU column of its server processes
    url: str
    tokens: list[str]  # tenant i's token on this server
    ids_de_jobs: list[list[int]]
    banco: Banco
    medidor: MedidorCpu
    dados: Path | None = None
    pid: int = 0


def executar(ctx: Contexto) -> None:
    wrk = garantir_wrk()
    t0 = time.monotonic()
    tenants = ctx.tenants()
    nota(f"B1: {len(tenants)} tenants ready in {time.monotonic() - t0:.1f}s")
    tokens = [t.token for t in tenants]
    lados: list[Lado] = []
    par = None
    webs = []
    try:
        if ctx.par:
            par = iniciar_par(ctx.banco, len(tenants))
        for servidor in ctx.servidores:
            web, url = iniciar_web(
                "b1", servidor, RELATORIOS_MAX_PENDENTES_POR_TENANT=SEM_LIMITE
            )
            webs.append(web)
            lado = _lado(servidor, web.nome, url, tokens, ctx.banco, web.pids)
            lado.pid = web.pid
            lados.append(lado)
        if par is not None:
            lados.append(_lado(PAR, "node", par.url, par.tokens, par.banco, par.pids))
        for lado in lados:
            lado.ids_de_jobs = _submeter_padroes(lado.url, lado.tokens, tenants)
            lado.dados = _escrever_dados(lado, tenants)
        for t, seus in zip(tenants, lados[0].ids_de_jobs, strict=True):
            t.ids_de_jobs = seus
        for n, cenario in enumerate(ctx.cenarios_b1):
            # Each wrk run has its own range of ad-hoc counters (see the Lua);
            # every server gets the same requests, one after the other.
            base = 2 * n * 1_000_000
            figuras = [_medir(ctx, wrk, lado, cenario, base) for lado in lados]
            do_par = figuras[-1] if par is not None else None
            rotular = len(ctx.servidores) > 1
            for lado, figura in zip(lados, figuras, strict=True):
                _imprimir(cenario, lado, figura, do_par, rotular)
    finally:
        for web in webs:
            web.parar()
        if par is not None:
            par.parar()


Figura = tuple[dict[str, Any], dict[str, float], dict[str, list[float]], int]


def _lado(
    rotulo: str,
    nome: str,
    url: str,
    tokens: list[str],
    banco: Banco,
    pids: Callable[[], list[int]],
) -> Lado:
    medidor = MedidorCpu(
        {nome: pids, "postgres": lambda: pids_do_banco(banco)},
        detalhar=frozenset({nome}),
    )
    return Lado(rotulo, nome, url, tokens, [], banco, medidor)


def _medir(ctx: Contexto, wrk: str, lado: Lado, cenario: str, base: int) -> Figura:
    assert lado.dados is not None
    _rodar_wrk(wrk, lado.url, cenario, lado.dados, base, ctx.aquecimento_s, ctx, None)
    antes = _contar_jobs(lado.banco)
    perfil = Perfil(lado.pid, f"b1-{cenario}") if ctx.perfil and lado.pid else None
    resultado, uso = _rodar_wrk(
        wrk,
        lado.url,
        cenario,
        lado.dados,
        base + 1_000_000,
        ctx.duracao_s,
        ctx,
        lado.medidor,
    )
    if perfil is not None:
        perfil.parar()
    time.sleep(0.5)  # requests in flight when wrk stopped
    novos = _contar_jobs(lado.banco) - antes
    return resultado, uso or {}, dict(lado.medidor.detalhe), novos


def _submeter_padroes(
    url: str, tokens: list[str], tenants: list[TenantDeBench]
) -> list[list[int]]:
    """Every chain's standard filters, once: the jobs S1 repeats and S3 reads."""

    def submeter(par: tuple[str, dict[str, Any]]) -> int:
        token, filtro = par
        return int(pedir_vendas(url, token, filtro, timeout=30)[1]["id"])

    pares = [
        (token, f) for token, t in zip(tokens, tenants, strict=True) for f in t.padroes
    ]
    with ThreadPoolExecutor(8) as executor:
        ids = list(executor.map(submeter, pares))
    por_tenant: list[list[int]] = [[] for _ in tenants]
    i = 0
    for k, t in enumerate(tenants):
        por_tenant[k] = ids[i : i + len(t.padroes)]
        i += len(t.padroes)
    return por_tenant


def _escrever_dados(lado: Lado, tenants: list[TenantDeBench]) -> Path:
    caminho = SAIDA / f"b1-dados-{lado.rotulo.replace(':', '-')}.tsv"
    caminho.parent.mkdir(parents=True, exist_ok=True)
    with caminho.open("w") as arquivo:
        for t, token, seus in zip(tenants, lado.tokens, lado.ids_de_jobs, strict=True):
            ids = ",".join(str(i) for i in seus)
            arquivo.write(f"T\t{token}\t{','.join(t.lojas)}\t{ids}\n")
            for p in t.padroes:
                lojas = ",".join(p["lojas"]) or "-"
                arquivo.write(
                    f"P\t{p['inicio']}\t{p['fim']}\t{p['agrupar']}\t{lojas}\n"
                )
    return caminho


def _rodar_wrk(
    wrk: str,
    url: str,
    cenario: str,
    dados: Path,
    base: int,
    duracao_s: int,
    ctx: Contexto,
    medidor: MedidorCpu | None,
) -> tuple[dict[str, Any], dict[str, float] | None]:
    args = [
        wrk,
        "-t1",
        f"-c{ctx.conexoes}",
        f"-d{duracao_s}s",
        "--timeout",
        "5s",
        "-s",
        str(LUA),
        url,
        "--",
        cenario,
        str(dados),
        str(base),
    ]
    if medidor is not None:
        medidor.iniciar()
    processo = Processo("wrk", args, dict(os.environ), SAIDA / f"b1-wrk-{cenario}.log")
    # Reap wrk ourselves: wait4 gives its exact CPU time (it is gone by the
    # time /proc could be read).
    _, estado, uso_wrk = os.wait4(processo.pid, 0)
    processo.popen.returncode = os.waitstatus_to_exitcode(estado)
    uso = None
    if medidor is not None:
        medidor.somar_segundos("wrk", uso_wrk.ru_utime + uso_wrk.ru_stime)
        uso = medidor.parar()
    processo.parar()
    saida = processo.texto_do_log()
    marcador = "RESULTADO "
    linhas = [x for x in saida.splitlines() if x.startswith(marcador)]
    if processo.popen.returncode != 0 or not linhas:
        raise RuntimeError(f"wrk failed ({processo.popen.returncode}):\n{saida}")
    return json.loads(linhas[-1][len(marcador) :]), uso


def _contar_jobs(banco: Banco) -> int:
    with banco.conectar() as conexao:
        linha_ = conexao.execute("SELECT count(*) FROM relatorio_jobs").fetchone()
    return int(linha_[0]) if linha_ else 0


def _taxa(r: dict[str, Any]) -> float:
    return float(max(1e-9, r["requisicoes"] / (r["duracao_us"] / 1e6)))


def _imprimir(
    cenario: str, lado: Lado, figura: Figura, do_par: Figura | None, rotular: bool
) -> None:
    """One line per server; ours carry the ratio to the peer's figure."""
    r, uso, detalhe, novos = figura
    erros_socket = (
        r["erros_conexao"]
        + r["erros_leitura"]
        + r["erros_escrita"]
        + r["erros_timeout"]
    )
    taxa = _taxa(r)
    texto = (
        f"{taxa:7.0f} req/s  "
        f"p50 {r['p50_us'] / 1000:6.1f} ms  p99 {r['p99_us'] / 1000:6.1f} ms  "
        f"non-2xx {r['erros_status']}"
    )
    # CPU per request is steadier than req/s on a machine others share: it
    # does not drop when a neighbour takes a core, only throughput does.
    texto += (
        f"  cpu/req {lado.nome} {uso.get(lado.nome, 0) * 10 / taxa:.2f} ms"
        f" postgres {uso.get('postgres', 0) * 10 / taxa:.2f} ms"
    )
    if erros_socket:
        texto += f"  socket-errors {erros_socket}"
    if cenario == "s1":
        ok = max(1, r["requisicoes"] - r["erros_status"])
        texto += f"  repeat {100 * (1 - novos / ok):.1f}% (db; 61% asked)"
    elif cenario in ("s2", "s4"):
        texto += f"  new-jobs {novos}"
    nome = f"B1 {NOMES[cenario]}"
    if lado.rotulo == PAR:
        nome += " peer"
    elif rotular:
        nome += f" [{lado.rotulo}]"
    if do_par is not None and lado.rotulo != PAR:
        p = do_par[0]
        texto += (
            f"  | ratio vs seed peer {taxa / _taxa(p):.2f}x"
            f" (target >= {ALVOS[cenario]}x)"
            f", p99 {r['p99_us'] / 1000:.1f} vs {p['p99_us'] / 1000:.1f} ms"
        )
    linha(nome, f"{texto}  | {formatar_cpu(uso, detalhe)}")
