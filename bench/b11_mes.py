"""B11 "um mês": a month of a chain's requests, computed on demand and then
with chunk reuse, computing ahead and partial results on (issue 34).

The month (bench/mes.py): each chain's ERP grows every night (yesterday's
sales, returns and stock movements, late corrections to past months); every
morning twenty managers click yesterday's sales and each store manager asks
for their own store's; Mondays the week, the 1st the monthly close; ad-hoc
ranges up to year-to-date and the last 12 months. A warm-up (unmeasured)
gives the predictor a request history to learn from.

Run twice in one `make bench`, against two identical copies of the data
(each chain is created twice, by the same gerar_dados seed): "off" (the
seed's design: every request computed when asked) and "on" (the knobs
below). Each run has its own web server and qcluster with its knobs, driven
through the real HTTP API: submit, then the status polled until pronto.
Computing ahead runs once a simulated night in this process
(`relatorios.jobs.antecipacao.antecipar(agora=...)`), its CPU counted with
the workers'. After each simulated day its jobs are moved back to that day
(`mes.viver_o_dia_em`), so the history reads as a month and results expire
as they would have.

Figures, off and on side by side: worker and PostgreSQL CPU-seconds of the
measured days, the wait a manager sees (submit -> pronto), the share
answered at once, the precision of computing ahead, the time to the first
partial rows of a cold 12-month report, and how many results of the "on"
run differ from the "off" run's (canonical JSON text, byte for byte).

A feature not on this branch is said so, and its run is then the "off"
one under another name: the harness works before the features are merged.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import psycopg

from bench import mes
from bench.ambiente import (
    TICKS_POR_S,
    MedidorCpu,
    iniciar_cluster,
    iniciar_web,
    ticks,
)
from bench.contexto import Contexto, linha, nota
from bench.preparo import criar_tenant, gerar_dados

# The bench's own connections (ERP loads, the clock, the monitor): left out
# of PostgreSQL's CPU. The service's are the web's, the cluster's and the
# in-process computing ahead's (`ANTECIPACAO`, counted).
HARNESS = "b11-harness"
ANTECIPACAO = "b11-antecipacao"
KNOBS = (
    "RELATORIOS_REUSO_PARTES",
    "RELATORIOS_RESULTADO_PARCIAL",
    "RELATORIOS_ANTECIPAR",
)
# More environment for the "on" run's processes. If the cluster also runs
# passes of computing ahead by itself, on the real clock (not the simulated
# month's), turn those off here: they would predict for the real today and
# only lower the precision.
# The clusters' own pass runs on the real clock, a year after the replayed
# month: it would find no history in its window, but it is kept out all the
# same; the bench's passes (`_noite`) are the ones that compute ahead.
EXTRAS_ON: dict[str, str] = {"RELATORIOS_ANTECIPAR_S": "86400"}
POLL_S = 0.01
ESPERA_MAX_S = 900.0


@dataclass(frozen=True)
class Forma:
    tenants: int
    lojas: int
    vendas_por_dia: int
    medidos: int
    aquecimento: int
    gerentes: int
    avulsos: int


RAPIDA = Forma(
    tenants=1,
    lojas=6,
    vendas_por_dia=400,
    medidos=6,
    aquecimento=3,
    gerentes=3,
    avulsos=3,
)
COMPLETA = Forma(
    tenants=2,
    lojas=20,
    vendas_por_dia=3000,
    medidos=30,
    aquecimento=21,
    gerentes=8,
    avulsos=5,
)


@dataclass
class Rede:
    """A chain of the bench: its copy for each run."""

    indice: int
    lojas: list[str]
    ids: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    # Each copy's sellers' ids -> their rank (the comissoes report shows the
    # ERP's own id, which differs between the copies).
    vendedores: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass
class Clique:
    """One manager's click: what came back at once, how long until pronto."""

    chave: tuple[int, str, str]  # (chain, day, request's name)
    job_id: int
    imediato: bool
    espera_s: float
    resultado: str | None  # canonical JSON; None: failed or never pronto


@dataclass
class Execucao:
    """One run's figures."""

    modo: str
    cliques: list[Clique] = field(default_factory=list)
    cpu_worker_s: float = 0.0
    cpu_postgres_s: float = 0.0
    # The API's side (submits and status polls), for information.
    cpu_web_s: float = 0.0
    cpu_postgres_web_s: float = 0.0
    antecipados: set[int] = field(default_factory=set)
    parcial_s: float | None = None
    frio_pronto_s: float | None = None
    trava: threading.Lock = field(default_factory=threading.Lock)


# --- which features this branch has -------------------------------------------------


def recursos() -> dict[str, bool]:
    """Each feature B11 measures: present on this branch?"""
    from django.conf import settings

    return {
        "reuso": hasattr(settings, "RELATORIOS_REUSO_PARTES"),
        "parcial": hasattr(settings, "RELATORIOS_RESULTADO_PARCIAL"),
        "antecipacao": _antecipar() is not None,
    }


def _antecipar() -> Callable[..., int] | None:
    try:
        modulo = importlib.import_module("relatorios.jobs.antecipacao")
    except ImportError:
        return None
    funcao = getattr(modulo, "antecipar", None)
    return funcao if callable(funcao) else None


# --- the run --------------------------------------------------------------------------


def executar(ctx: Contexto) -> None:
    forma = RAPIDA if ctx.rapido else COMPLETA
    anterior = os.environ.get("PGAPPNAME")
    os.environ["PGAPPNAME"] = HARNESS
    from django.db import connections

    connections.close_all()
    try:
        presentes = recursos()
        for nome, ha in presentes.items():
            if not ha:
                nota(f"B11: {nome} is not on this branch: its 'on' equals 'off'")
        redes = _preparar(forma)
        dias = mes.calendario(
            medidos=forma.medidos,
            aquecimento=forma.aquecimento,
            lojas=redes[0].lojas,
            gerentes=forma.gerentes,
            avulsos=forma.avulsos,
        )
        _aquecer_cache(ctx)
        off = _rodar(ctx, forma, redes, dias, "off")
        on = _rodar(ctx, forma, redes, dias, "on")
        _imprimir(off, on, presentes)
    finally:
        if anterior is None:
            os.environ.pop("PGAPPNAME", None)
        else:
            os.environ["PGAPPNAME"] = anterior
        connections.close_all()


def _aquecer_cache(ctx: Contexto) -> None:
    """Both copies' data read once before the first run: the "off" run, which
    goes first, must not pay for a cold cache that the "on" run then finds
    warm."""
    with psycopg.connect(
        ctx.banco.url, autocommit=True, application_name=HARNESS
    ) as conexao:
        for tabela in ("erp_vendas", "erp_devolucoes", "erp_movimentos_estoque"):
            conexao.execute(f"SELECT count(*) FROM {tabela}")


def _preparar(forma: Forma) -> list[Rede]:
    redes = []
    dias = (mes.MES - mes.HISTORIA_DESDE).days
    inicio = time.monotonic()
    for i in range(1, forma.tenants + 1):
        rede = Rede(i, [f"L{j:03d}" for j in range(1, forma.lojas + 1)])
        for modo in ("off", "on"):
            tenant_id, token = criar_tenant(f"Rede do mes {i} {modo}", f"mes{i}{modo}")
            gerar_dados(
                tenant_id,
                lojas=forma.lojas,
                vendas=forma.vendas_por_dia * dias,
                produtos=50,
                inicio=mes.HISTORIA_DESDE.isoformat(),
                dias=dias,
                seed=100 + i,
            )
            rede.ids[modo], rede.tokens[modo] = tenant_id, token
        redes.append(rede)
    nota(
        f"B11: {forma.tenants} chain(s) x 2 copies, {forma.lojas} stores,"
        f" {forma.vendas_por_dia * dias:,} sales each ({dias} days) in"
        f" {time.monotonic() - inicio:.0f}s"
    )
    return redes


def _rodar(
    ctx: Contexto,
    forma: Forma,
    redes: list[Rede],
    dias: list[mes.Dia],
    modo: str,
) -> Execucao:
    # Each run learns from its own history only: the other's jobs would be
    # predicted too.
    ctx.banco.sem_jobs()
    valor = "1" if modo == "on" else "0"
    knobs = {nome: valor for nome in KNOBS} | (EXTRAS_ON if modo == "on" else {})
    cluster = iniciar_cluster(f"b11-{modo}", PGAPPNAME=f"b11-{modo}-cluster", **knobs)
    web, url = iniciar_web(f"b11-{modo}", PGAPPNAME=f"b11-{modo}-web", **knobs)
    execucao = Execucao(modo)
    monitor = psycopg.connect(
        ctx.banco.url, autocommit=True, application_name=f"{HARNESS}-monitor"
    )
    conexao = psycopg.connect(ctx.banco.url, autocommit=True, application_name=HARNESS)
    cadastros = {r.indice: mes.cadastro(conexao, r.ids[modo]) for r in redes}
    for rede in redes:
        ordem = cadastros[rede.indice].vendedores
        rede.vendedores[modo] = {v: n for n, v in enumerate(ordem)}
    medidor = MedidorCpu(
        {
            "worker": cluster.pids,
            "postgres": lambda: _backends(monitor, ctx.banco.nome, "%-cluster"),
            "web": web.pids,
            "postgres web": lambda: _backends(monitor, ctx.banco.nome, "%-web"),
        }
    )
    antecipar = _antecipar() if modo == "on" else None
    try:
        inicio_mes = time.monotonic()
        medindo = False
        for dia in dias:
            if dia.medido and not medindo:
                medidor.iniciar()
                parede0 = time.monotonic()
                medindo = True
            desde = _agora(conexao)
            for rede in redes:
                mes.carga_da_noite(
                    conexao,
                    cadastros[rede.indice],
                    dia.data,
                    # The history already holds the days before the month.
                    vendas_por_dia=forma.vendas_por_dia if dia.data > mes.MES else 0,
                    semente=rede.indice,
                )
            if antecipar is not None:
                _noite(ctx, conexao, antecipar, dia, execucao, medidor)
            _manha(url, redes, dia, modo, execucao)
            mes.viver_o_dia_em(
                conexao, desde=desde, instante=dia.instante(mes.MANHA_UTC)
            )
        uso = medidor.parar()
        parede = time.monotonic() - parede0
        execucao.cpu_worker_s = uso["worker"] * parede / 100
        execucao.cpu_postgres_s = uso["postgres"] * parede / 100
        execucao.cpu_web_s = uso["web"] * parede / 100
        execucao.cpu_postgres_web_s = uso["postgres web"] * parede / 100
        nota(
            f"B11 {modo}: {len(dias)} days ({sum(d.medido for d in dias)} measured)"
            f" in {time.monotonic() - inicio_mes:.0f}s"
        )
        _frio(url, redes[0], modo, dias[-1].data, execucao)
    finally:
        web.parar()
        cluster.parar()
        conexao.close()
        monitor.close()
    return execucao


def _agora(conexao: psycopg.Connection[Any]) -> datetime:
    linha_ = conexao.execute("SELECT clock_timestamp()").fetchone()
    assert linha_ is not None
    return linha_[0]


def _backends(monitor: psycopg.Connection[Any], banco: str, nome: str) -> list[int]:
    """The backends on the bench database of the processes whose
    `application_name` is like `nome` (the cluster's, the web's; the
    harness's own are never counted)."""
    linhas = monitor.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s"
        " AND application_name LIKE %s",
        [banco, nome],
    ).fetchall()
    return [int(pid) for (pid,) in linhas]


def _noite(
    ctx: Contexto,
    conexao: psycopg.Connection[Any],
    antecipar: Callable[..., int],
    dia: mes.Dia,
    execucao: Execucao,
    medidor: MedidorCpu,
) -> None:
    """One pass of computing ahead as of the simulated 06:00, in this process
    on a connection of its own (its CPU and its backend's added to the
    figures), then the night: until every job it submitted is final."""
    from django.db import connection
    from django.test import override_settings

    antes = _agora(conexao)
    connection.close()
    os.environ["PGAPPNAME"] = ANTECIPACAO
    cpu0 = time.process_time()
    try:
        # The night's pass, before the managers' morning: whatever time of
        # day a pattern was asked at, it is due as the day starts.
        with override_settings(RELATORIOS_ANTECIPAR_ANTECEDENCIA_S=86400):
            antecipar(agora=dia.instante(mes.ANTECIPACAO_UTC))
        cpu_python = time.process_time() - cpu0
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = int(cursor.fetchone()[0])
        cpu_backend = ticks(pid) / TICKS_POR_S
    finally:
        connection.close()
        os.environ["PGAPPNAME"] = HARNESS
    novos = {
        int(i)
        for (i,) in conexao.execute(
            # New or restarted by the pass (nothing else submits meanwhile).
            "SELECT id FROM relatorio_jobs WHERE criado_em >= %s",
            [antes],
        ).fetchall()
    }
    if dia.medido:
        medidor.somar_segundos("worker", cpu_python)
        medidor.somar_segundos("postgres", cpu_backend)
        execucao.antecipados |= novos
    _esperar_finais(conexao, novos)


def _esperar_finais(conexao: psycopg.Connection[Any], ids: set[int]) -> None:
    limite = time.monotonic() + ESPERA_MAX_S
    while ids and time.monotonic() < limite:
        linha_ = conexao.execute(
            "SELECT count(*) FROM relatorio_jobs WHERE id = ANY(%s)"
            " AND status IN ('pendente', 'executando')",
            [list(ids)],
        ).fetchone()
        if linha_ is None or linha_[0] == 0:
            return
        time.sleep(0.05)


def _manha(
    url: str, redes: list[Rede], dia: mes.Dia, modo: str, execucao: Execucao
) -> None:
    """The day's clicks, all at once (each a client: submit, poll until
    pronto)."""
    tarefas = [
        (rede, pedido)
        for rede in redes
        for pedido in dia.pedidos
        for _ in range(pedido.cliques)
    ]
    with ThreadPoolExecutor(max_workers=32) as pool:
        feitos = list(
            pool.map(lambda t: _clicar(url, t[0], dia.data, t[1], modo), tarefas)
        )
    if dia.medido:
        with execucao.trava:
            execucao.cliques.extend(feitos)


def _clicar(url: str, rede: Rede, dia: date, pedido: mes.Pedido, modo: str) -> Clique:
    token = rede.tokens[modo]
    chave = (rede.indice, dia.isoformat(), pedido.nome)
    inicio = time.monotonic()
    status, corpo = _http(
        url, token, "POST", f"/relatorios/{pedido.tipo}", pedido.params
    )
    if status not in (200, 202) or not isinstance(corpo, dict):
        raise RuntimeError(f"B11: {pedido.nome} on {dia}: {status} {corpo}")
    job_id = int(corpo["id"])
    imediato = status == 200 and "resultado" in corpo
    while corpo.get("status") not in ("pronto", "falhou"):
        if time.monotonic() - inicio > ESPERA_MAX_S:
            break
        time.sleep(POLL_S)
        _, corpo = _http(url, token, "GET", f"/relatorios/jobs/{job_id}")
    espera = 0.0 if imediato else time.monotonic() - inicio
    resultado = corpo.get("resultado") if corpo.get("status") == "pronto" else None
    texto = None if resultado is None else canonico(resultado, rede.vendedores[modo])
    return Clique(chave, job_id, imediato, espera, texto)


def canonico(resultado: Any, vendedores: dict[int, int]) -> str:
    """The text two results are compared by: keys sorted, no spaces; each
    `vendedor_id` (the one value that is the copy's own, not the data's)
    replaced by the seller's rank in its copy."""

    def traduzir(valor: Any) -> Any:
        if isinstance(valor, dict):
            return {
                k: vendedores.get(v, v) if k == "vendedor_id" else traduzir(v)
                for k, v in valor.items()
            }
        if isinstance(valor, list):
            return [traduzir(v) for v in valor]
        return valor

    return json.dumps(
        traduzir(resultado), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def _http(
    url: str, token: str, metodo: str, caminho: str, corpo: Any = None
) -> tuple[int, Any]:
    dados = None if corpo is None else json.dumps(corpo).encode()
    pedido = urllib.request.Request(url + caminho, data=dados, method=metodo)
    pedido.add_header("Authorization", f"Token {token}")
    if dados is not None:
        pedido.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(pedido, timeout=60) as resposta:
            return int(resposta.status), json.loads(resposta.read())
    except urllib.error.HTTPError as erro:
        with contextlib.suppress(ValueError):
            return erro.code, json.loads(erro.read())
        return erro.code, None


def _frio(url: str, rede: Rede, modo: str, ultimo: date, execucao: Execucao) -> None:
    """A cold 12-month report by day (stores no other request used): the
    time from its submit to the first status carrying `resultado_parcial`
    with rows, and to pronto."""
    token = rede.tokens[modo]
    params = {
        "inicio": (ultimo - timedelta(days=364)).isoformat(),
        "fim": ultimo.isoformat(),
        "agrupar": "dia",
        "lojas": rede.lojas[-2:],
    }
    inicio = time.monotonic()
    status, corpo = _http(url, token, "POST", "/relatorios/vendas", params)
    if status not in (200, 202) or not isinstance(corpo, dict):
        raise RuntimeError(f"B11 cold report: {status} {corpo}")
    while corpo.get("status") not in ("pronto", "falhou"):
        if execucao.parcial_s is None and _tem_linhas(corpo.get("resultado_parcial")):
            execucao.parcial_s = time.monotonic() - inicio
        if time.monotonic() - inicio > ESPERA_MAX_S:
            return
        time.sleep(POLL_S)
        _, corpo = _http(url, token, "GET", f"/relatorios/jobs/{corpo['id']}")
    execucao.frio_pronto_s = time.monotonic() - inicio


def _tem_linhas(parcial: Any) -> bool:
    """Whether a `resultado_parcial` shows rows: its `linhas`, or those of a
    `resultado` inside it (the agreed shape: the chunks combined so far and
    which part of the range they cover)."""
    if not isinstance(parcial, dict):
        return False
    if parcial.get("linhas"):
        return True
    interno = parcial.get("resultado")
    return isinstance(interno, dict) and bool(interno.get("linhas"))


# --- the figures ---------------------------------------------------------------------


def precisao(antecipados: set[int], cliques: list[Clique]) -> float | None:
    """Share of the jobs computed ahead that a manager then asked for before
    they expired: a click answered with that job on its own simulated day
    (the clock moves it back, and so expires it, at the day's end). None
    when nothing was computed ahead. (The service's own metric is
    Prometheus'; this is the same ratio from the bench's data.)"""
    if not antecipados:
        return None
    pedidos = {c.job_id for c in cliques}
    return len(antecipados & pedidos) / len(antecipados)


def diferencas(off: Execucao, on: Execucao) -> tuple[int, list[str], int]:
    """(requests of both runs, those whose results are not all the same text,
    requests without a result in either run). Every click of a request is
    compared, in both runs: the twenty who clicked the same report too."""
    textos: dict[tuple[int, str, str], dict[str, set[str | None]]] = {}
    for execucao in (off, on):
        for c in execucao.cliques:
            por_modo = textos.setdefault(c.chave, {})
            por_modo.setdefault(execucao.modo, set()).add(c.resultado)
    comuns = sorted(k for k, v in textos.items() if len(v) == 2)
    sem = sum(1 for k in comuns if None in textos[k]["off"] | textos[k]["on"])
    diferentes = [
        f"chain {k[0]} {k[1]} {k[2]}"
        for k in comuns
        if len(textos[k]["off"] | textos[k]["on"]) > 1
    ]
    return len(comuns), diferentes, sem


def _percentil(valores: list[float], p: float) -> float:
    ordenados = sorted(valores)
    if not ordenados:
        return float("nan")
    return ordenados[min(len(ordenados) - 1, int(len(ordenados) * p / 100))]


def _meta(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _imprimir(off: Execucao, on: Execucao, presentes: dict[str, bool]) -> None:
    ausentes = [n for n, ha in presentes.items() if not ha]
    if ausentes:
        nota(f"B11: absent on this branch: {', '.join(ausentes)} ('on' = 'off' there)")
    fontes = {
        "worker": "/proc utime+stime: the qcluster's processes + computing ahead",
        "postgres": "/proc utime+stime: the cluster's backends + computing ahead's",
    }
    for nome, a, b in (
        ("worker", off.cpu_worker_s, on.cpu_worker_s),
        ("postgres", off.cpu_postgres_s, on.cpu_postgres_s),
    ):
        razao = b / a if a else float("nan")
        linha(
            f"B11 cpu {nome}",
            f"off {a:.1f} s  on {b:.1f} s  on/off {razao:.2f} (target <= 0.3)"
            f" {_meta(razao <= 0.3)}  [{fontes[nome]}]",
        )
    linha(
        "B11 cpu api",
        f"off web {off.cpu_web_s:.1f} s + its backends {off.cpu_postgres_web_s:.1f} s"
        f"  on web {on.cpu_web_s:.1f} s + {on.cpu_postgres_web_s:.1f} s"
        "  [submits and 10 ms status polls: information, not a target]",
    )
    esperas = {e.modo: [c.espera_s for c in e.cliques] for e in (off, on)}
    med = {m: statistics.median(v) if v else float("nan") for m, v in esperas.items()}
    p95 = {m: _percentil(v, 95) for m, v in esperas.items()}
    linha(
        "B11 wait median",
        f"off {_ms(med['off'])}  on {_ms(med['on'])} (target on <= 100 ms)"
        f" {_meta(med['on'] <= 0.1)}  [submit -> pronto, n={len(esperas['on'])}]",
    )
    razao_p95 = p95["on"] / p95["off"] if p95["off"] else float("nan")
    linha(
        "B11 wait p95",
        f"off {_ms(p95['off'])}  on {_ms(p95['on'])}  on/off {razao_p95:.2f}"
        f" (target <= 0.5) {_meta(razao_p95 <= 0.5)}",
    )
    imediatos = {
        e.modo: sum(c.imediato for c in e.cliques) / max(1, len(e.cliques))
        for e in (off, on)
    }
    linha(
        "B11 answered at once",
        f"off {imediatos['off']:.0%}  on {imediatos['on']:.0%} (target on >= 70%)"
        f" {_meta(imediatos['on'] >= 0.7)}  [200 with resultado]",
    )
    p = precisao(on.antecipados, on.cliques)
    if p is None:
        texto = "on —  (nothing computed ahead" + (
            ")" if presentes["antecipacao"] else ": absent)"
        )
    else:
        texto = (
            f"on {p:.2f} of {len(on.antecipados)} jobs computed ahead"
            f" (target >= 0.8) {_meta(p >= 0.8)}"
        )
    linha("B11 ahead precision", texto)
    parcial = on.parcial_s
    if parcial is None:
        alvo = "  (no resultado_parcial seen" + (
            ")" if presentes["parcial"] else ": absent)"
        )
    else:
        alvo = f" (target <= 1 s) {_meta(parcial <= 1.0)}"
    linha(
        "B11 first partial rows",
        f"cold 12-month report: off — (pronto {_s(off.frio_pronto_s)})"
        f"  on {_s(parcial)} (pronto {_s(on.frio_pronto_s)}){alvo}",
    )
    comuns, diferentes, sem = diferencas(off, on)
    linha(
        "B11 results differ",
        f"{len(diferentes)} of {comuns} requests differ between on and off byte for"
        f" byte (target 0) {_meta(not diferentes)}"
        + (f"; {sem} without a result" if sem else ""),
    )
    if diferentes:
        nota(f"B11: differing: {'; '.join(diferentes[:5])}")


def _ms(valor: float) -> str:
    return f"{valor * 1000:.0f} ms"


def _s(valor: float | None) -> str:
    return "—" if valor is None else f"{valor:.2f} s"
