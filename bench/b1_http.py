"""B1 HTTP: wrk against gunicorn (production settings), scenarios S1..S4.

200 chains with real store codes. Each chain's five standard filters are
submitted once before the runs (the Monday-morning panel); no cluster runs, so
every job stays `pendente` and a repeat is a dedup hit answered with 202.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.ambiente import (
    SAIDA,
    MedidorCpu,
    Perfil,
    Processo,
    formatar_cpu,
    garantir_wrk,
    iniciar_gunicorn,
    pedir_vendas,
    pids_do_banco,
)
from bench.contexto import Contexto, linha, nota
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


def executar(ctx: Contexto) -> None:
    wrk = garantir_wrk()
    t0 = time.monotonic()
    tenants = ctx.tenants()
    nota(f"B1: {len(tenants)} tenants ready in {time.monotonic() - t0:.1f}s")
    gunicorn, url = iniciar_gunicorn(
        "b1", RELATORIOS_MAX_PENDENTES_POR_TENANT=SEM_LIMITE
    )
    try:
        _submeter_padroes(url, tenants)
        dados = _escrever_dados(tenants)
        medidor = MedidorCpu(
            {
                "gunicorn": gunicorn.pids,
                "postgres": lambda: pids_do_banco(ctx.banco),
            }
        )
        for n, cenario in enumerate(ctx.cenarios_b1):
            # Each wrk run has its own range of ad-hoc counters (see the Lua).
            base = 2 * n * 1_000_000
            _rodar_wrk(wrk, url, cenario, dados, base, ctx.aquecimento_s, ctx, None)
            antes = _contar_jobs(ctx)
            perfil = Perfil(gunicorn.pid, f"b1-{cenario}") if ctx.perfil else None
            resultado, uso = _rodar_wrk(
                wrk, url, cenario, dados, base + 1_000_000, ctx.duracao_s, ctx, medidor
            )
            if perfil is not None:
                perfil.parar()
            time.sleep(0.5)  # requests in flight when wrk stopped
            novos = _contar_jobs(ctx) - antes
            _imprimir(cenario, resultado, uso or {}, medidor.detalhe, novos)
    finally:
        gunicorn.parar()


def _submeter_padroes(url: str, tenants: list[TenantDeBench]) -> None:
    """Every chain's standard filters, once: the jobs S1 repeats and S3 reads."""

    def submeter(par: tuple[TenantDeBench, dict[str, Any]]) -> int:
        tenant, filtro = par
        return int(pedir_vendas(url, tenant.token, filtro, timeout=30)[1]["id"])

    pares = [(t, f) for t in tenants for f in t.padroes]
    with ThreadPoolExecutor(8) as executor:
        ids = list(executor.map(submeter, pares))
    for tenant in tenants:
        tenant.ids_de_jobs = []
    for (tenant, _), job_id in zip(pares, ids, strict=True):
        tenant.ids_de_jobs.append(job_id)


def _escrever_dados(tenants: list[TenantDeBench]) -> Path:
    caminho = SAIDA / "b1-dados.tsv"
    caminho.parent.mkdir(parents=True, exist_ok=True)
    with caminho.open("w") as arquivo:
        for t in tenants:
            ids = ",".join(str(i) for i in t.ids_de_jobs)
            arquivo.write(f"T\t{t.token}\t{','.join(t.lojas)}\t{ids}\n")
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


def _contar_jobs(ctx: Contexto) -> int:
    with ctx.banco.conectar() as conexao:
        linha_ = conexao.execute("SELECT count(*) FROM relatorio_jobs").fetchone()
    return int(linha_[0]) if linha_ else 0


def _imprimir(
    cenario: str,
    r: dict[str, Any],
    uso: dict[str, float],
    detalhe: dict[str, list[float]],
    novos: int,
) -> None:
    segundos = r["duracao_us"] / 1e6
    erros_socket = (
        r["erros_conexao"]
        + r["erros_leitura"]
        + r["erros_escrita"]
        + r["erros_timeout"]
    )
    texto = (
        f"{r['requisicoes'] / segundos:7.0f} req/s  "
        f"p50 {r['p50_us'] / 1000:6.1f} ms  p99 {r['p99_us'] / 1000:6.1f} ms  "
        f"non-2xx {r['erros_status']}"
    )
    # CPU per request is steadier than req/s on a machine others share: it
    # does not drop when a neighbour takes a core, only throughput does.
    taxa = max(1e-9, r["requisicoes"] / segundos)
    texto += (
        f"  cpu/req gunicorn {uso.get('gunicorn', 0) * 10 / taxa:.2f} ms"
        f" postgres {uso.get('postgres', 0) * 10 / taxa:.2f} ms"
    )
    if erros_socket:
        texto += f"  socket-errors {erros_socket}"
    if cenario == "s1":
        ok = max(1, r["requisicoes"] - r["erros_status"])
        texto += f"  repeat {100 * (1 - novos / ok):.1f}% (db; 61% asked)"
    elif cenario in ("s2", "s4"):
        texto += f"  new-jobs {novos}"
    linha(f"B1 {NOMES[cenario]}", f"{texto}  | {formatar_cpu(uso, detalhe)}")
