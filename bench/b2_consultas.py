"""B2 round trips: what one request costs in conversations with PostgreSQL.

The request runs in this process through Django's real WSGI handler (the
request_started/finished signals, the middleware, DRF, the health check of
a reused connection: all as under the web server). The connection's libpq trace
records every message on the wire; each `ReadyForQuery` from the server ends
one round trip, so nothing is missed: the health check's `SELECT 1` (which
bypasses Django's cursor wrappers, and so CaptureQueriesContext), BEGIN,
COMMIT and savepoints included.
"""

from __future__ import annotations

import functools
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from bench.chamada import chamar
from bench.contexto import Contexto, linha, nota

# Where a statement belongs, first match wins.
CATEGORIAS: list[tuple[str, re.Pattern[str]]] = [
    ("health-check", re.compile(r"^SELECT 1$")),
    ("auth", re.compile(r"authtoken_token|FROM \"usuarios\"", re.IGNORECASE)),
    ("tx", re.compile(r"^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)", re.IGNORECASE)),
    ("app", re.compile(r".")),
]
_ENVIADA = re.compile(r'^F\t\d+\t(Query|Parse)\t (?:"[^"]*" )?"(.*)"', re.DOTALL)
# A prepared statement (psycopg's prepare_threshold) is only bound by name.
_PREPARADA = re.compile(r'^F\t\d+\tBind\t "" "([^"]+)"')


@dataclass
class Medida:
    """One request on the wire: its HTTP status, statements and round trips."""

    status: int
    voltas: int
    sentencas: list[str]
    preparadas: int = 0

    def por_categoria(self) -> dict[str, int]:
        contagem = {nome: 0 for nome, _ in CATEGORIAS}
        for texto in self.sentencas:
            for nome, padrao in CATEGORIAS:
                if padrao.search(texto):
                    contagem[nome] += 1
                    break
        return contagem


def executar(ctx: Contexto) -> None:
    from relatorios.api.cadeia import HandlerWsgi, sinais_do_servidor

    tenant = ctx.tenants()[0]
    # config.wsgi's handler (token calls take the API's middleware chain);
    # importing config.wsgi would set up Django (logging) again.
    app = HandlerWsgi()
    sinais_do_servidor()  # as config/wsgi.py
    repeticoes = 200 if ctx.rapido else 2000

    def pedir(
        metodo: str, caminho: str, corpo: dict[str, Any] | None, rastrear: bool
    ) -> Medida:
        if rastrear:
            return _medir(app, metodo, caminho, tenant.token, corpo)
        status = chamar(app, metodo, caminho, tenant.token, corpo)
        return Medida(status=status, voltas=0, sentencas=[])

    # Instructions per request first, in a child under callgrind with its own
    # filters (bench/instrucoes.py): the figure the neighbours cannot move.
    from bench.instrucoes import medir

    instrucoes = medir(tenant.token, n=100 if ctx.rapido else 400)
    por_nome = {"dedup hit": "dedup", "new submit": "novo", "status GET": "status"}

    filtro = {"inicio": "2027-03-01", "fim": "2027-03-31", "agrupar": "dia"}
    # The first request of this token in this process: a cold cache, if any.
    fria = pedir("POST", "/relatorios/vendas", filtro, True)
    job_id = _ultimo_id()
    contador = iter(range(1, 10**6))

    def novo(rastrear: bool) -> Medida:
        # A period no request had (under RELATORIOS_PERIODO_MAX_ANOS).
        fim = date(2027, 3, 1) + timedelta(days=next(contador) % 1800)
        corpo = {**filtro, "fim": fim.isoformat(), "agrupar": "mes"}
        return pedir("POST", "/relatorios/vendas", corpo, rastrear)

    casos: list[tuple[str, Callable[[bool], Medida], int]] = [
        ("dedup hit", lambda r: pedir("POST", "/relatorios/vendas", filtro, r), 202),
        ("new submit", novo, 202),
        (
            "status GET",
            lambda r: pedir("GET", f"/relatorios/jobs/{job_id}", None, r),
            200,
        ),
    ]
    for nome, fazer, esperado in casos:
        # The steady state: the third of its kind (a statement psycopg
        # prepares costs one more round trip once per connection).
        for _ in range(2):
            fazer(False)
        medida = fazer(True)
        if medida.status != esperado:
            raise RuntimeError(f"B2 {nome}: HTTP {medida.status}, not {esperado}")
        custo = _custo(functools.partial(fazer, False), repeticoes)
        _imprimir(f"B2 {nome}", medida, custo, instrucoes[por_nome[nome]])
    _imprimir("B2 new submit, cold", fria, None)
    nota(
        "B2 cold: the first request of a token in a process (auth cache empty); "
        f"cpu: mean per request over {repeticoes} in-process requests (no HTTP "
        "server), this process and its PostgreSQL backend, with the settings' "
        "defaults (no prepared statements: only the web's workers prepare, B1); "
        "instr: instructions per request under callgrind, in-process, prepared "
        "statements on as in the web (bench/instrucoes.py)"
    )


def _custo(fazer: Callable[[], Any], n: int) -> tuple[float, float]:
    """CPU ms per request in this process and in its PostgreSQL backend."""
    from django.db import connection

    from bench.ambiente import TICKS_POR_S, ticks

    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    t0, pg0 = time.process_time(), ticks(backend)
    for _ in range(n):
        fazer()
    t1, pg1 = time.process_time(), ticks(backend)
    return 1000 * (t1 - t0) / n, 1000 * (pg1 - pg0) / TICKS_POR_S / n


def _imprimir(
    figura: str,
    medida: Medida,
    custo: tuple[float, float] | None,
    instrucoes: float | None = None,
) -> None:
    cat = medida.por_categoria()
    detalhe = " + ".join(f"{nome} {n}" for nome, n in cat.items() if n)
    cpu = (
        f"cpu/req python {custo[0]:.2f} ms postgres {custo[1]:.2f} ms; "
        if custo
        else ""
    )
    instr = f"instr/req {instrucoes / 1e6:.3f}M; " if instrucoes else ""
    linha(
        figura,
        instr
        + cpu
        + f"{medida.voltas} round trips ({detalhe})"
        + (f", {medida.preparadas} prepared" if medida.preparadas else "")
        + "; app SQL: "
        + "; ".join(resumo(s) for s in medida.sentencas if categoria(s) == "app"),
    )


def categoria(texto: str) -> str:
    for nome, padrao in CATEGORIAS:
        if padrao.search(texto):
            return nome
    return "app"


def resumo(texto: str) -> str:
    """The first words of a statement and its table, on one line."""
    plano = " ".join(texto.split())
    if "set_config" in plano:
        return "SELECT set_config"
    tabela = re.search(r"(?:FROM|INTO|UPDATE)\s+\"?(\w+)", plano, re.IGNORECASE)
    verbo = plano.split(" ", 1)[0].upper()
    return f"{verbo} {tabela.group(1) if tabela else ''}".strip()


def _ultimo_id() -> int:
    from relatorios.models import RelatorioJob

    job = RelatorioJob.objects.order_by("-id").only("id").first()
    if job is None:
        raise RuntimeError("B2: no job after the first submit")
    return int(job.id)


def _medir(
    app: Any, metodo: str, caminho: str, token: str, corpo: dict[str, Any] | None
) -> Medida:
    return rastrear(lambda: chamar(app, metodo, caminho, token, corpo))


def rastrear(fazer: Callable[[], int]) -> Medida:
    """Runs `fazer` with this thread's connection traced; `status` is its return.

    The code must reuse the connection (CONN_MAX_AGE), as a request and a
    worker's task do: a new one would not be traced, and that is an error.
    """
    from django.db import connection
    from psycopg import pq

    # A connection near the end of its CONN_MAX_AGE would be replaced by the
    # request's own close_old_connections, out of the trace: renew it first.
    if connection.close_at is not None and connection.close_at - time.monotonic() < 30:
        connection.close()
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    with tempfile.TemporaryFile("w+") as rastro:
        pgconn.trace(rastro.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            status = fazer()
        finally:
            pgconn.untrace()
        if connection.connection is None or connection.connection.pgconn is not pgconn:
            raise RuntimeError("the traced code did not reuse its connection")
        rastro.seek(0)
        texto = rastro.read()
    sentencas = []
    voltas = 0
    usadas = 0
    preparadas = _preparadas(connection)
    for registro in _registros(texto):
        if registro.startswith("B\t") and "\tReadyForQuery\t" in registro:
            voltas += 1
        achado = _ENVIADA.match(registro)
        if achado:
            sentencas.append(achado.group(2))
            continue
        achado = _PREPARADA.match(registro)
        if achado:
            usadas += 1
            sentencas.append(preparadas.get(achado.group(1), achado.group(1)))
    return Medida(status=status, voltas=voltas, sentencas=sentencas, preparadas=usadas)


def _preparadas(connection: Any) -> dict[str, str]:
    """Name -> text of the statements prepared on this connection (after the
    traced request, so the lookup is not counted)."""
    with connection.connection.cursor() as cursor:
        cursor.execute("SELECT name, statement FROM pg_prepared_statements")
        return {nome: texto for nome, texto in cursor.fetchall()}


def _registros(texto: str) -> list[str]:
    """One string per protocol message (a query's own newlines are kept)."""
    registros: list[str] = []
    for trecho in texto.split("\n"):
        if trecho.startswith(("F\t", "B\t")) or not registros:
            registros.append(trecho)
        else:
            registros[-1] += "\n" + trecho
    return registros
