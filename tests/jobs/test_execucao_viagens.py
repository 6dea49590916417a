"""The worker's side of a job on the wire: what each chunk statement runs
under, how many round trips a small job costs, and the heartbeat thread.

In this process (no cluster), on a connection in autocommit as a worker's
is; test_falhas.py and test_worker.py run the same code in real clusters.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from django.db import DatabaseError, OperationalError, connection
from django.db.backends.utils import CursorWrapper
from django.test.utils import CaptureQueriesContext
from django_q.models import OrmQ
from psycopg import sql

from relatorios import tasks
from relatorios.jobs import execucao, pedidos, suporte
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from relatorios.tipos.base import Contexto, Parcial, Parte, TipoRelatorio
from tests import helpers

pytestmark = pytest.mark.django_db(transaction=True)

UTC = ZoneInfo("UTC")


class Espiao(TipoRelatorio):
    """Runs the statements it is given in one chunk and returns their rows."""

    tipo = "teste_espiao"
    titulo = "Espião"
    # Each run must run its statements: never a stored chunk.
    partes_reutilizaveis = False

    def __init__(self, *sentencas: tuple[str, Any]) -> None:
        self.sentencas = sentencas

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return [{"unica": True}]

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        linhas = []
        for texto, parametros in self.sentencas:
            cursor.execute(texto, parametros)
            linhas.append([list(linha) for linha in cursor.fetchall()])
        return {"linhas": linhas}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return parciais[0]


LIMITES_VISTOS = (
    "SELECT current_setting('transaction_read_only'),"
    " (SELECT setting::int FROM pg_settings WHERE name = 'statement_timeout')",
    None,
)


def calcular(tipo: TipoRelatorio, timeout_s: float = 60) -> list[Any]:
    assert not connection.in_atomic_block  # autocommit, as in a worker
    ctx = Contexto(job_id=0, tenant_id=0, fuso_horario="UTC")
    resultado = execucao.calcular(tipo, ctx, {}, timeout_s=timeout_s)
    return list(resultado["linhas"])


def idas_ao_banco(fazer: Callable[[], object]) -> tuple[int, str]:
    """Round trips of this thread's connection while `fazer` runs (one per
    ReadyForQuery on the wire, as in bench/b2_consultas.py), and the trace."""
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    with tempfile.NamedTemporaryFile(mode="w+") as arquivo:
        pgconn.trace(arquivo.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            fazer()
        finally:
            pgconn.untrace()
        assert connection.connection.pgconn is pgconn, "a new connection"
        rastro = Path(arquivo.name).read_text()
    idas = sum(
        1
        for linha in rastro.splitlines()
        if linha.startswith("B\t") and "\tReadyForQuery\t" in linha
    )
    return idas, rastro


# --- Each statement of a chunk: read-only, under the job's deadline -------------


def test_cada_sentenca_da_parte_e_somente_leitura_com_o_prazo_do_job() -> None:
    primeira, segunda = calcular(Espiao(LIMITES_VISTOS, LIMITES_VISTOS), timeout_s=60)

    for ((somente_leitura, timeout_ms),) in (primeira, segunda):
        assert somente_leitura == "on"
        # What is left of the job's 60 s when the statement is sent.
        assert 50_000 < timeout_ms <= 60_000
    assert segunda[0][1] <= primeira[0][1]


def test_escrever_numa_parte_falha_e_nada_fica_escrito(tenant: Tenant) -> None:
    escrita = (
        "UPDATE tenants SET nome = 'mudado' WHERE id = %s",
        [tenant.pk],
    )

    with pytest.raises(DatabaseError) as erro:
        calcular(Espiao(LIMITES_VISTOS, escrita))

    assert isinstance(erro.value.__cause__, psycopg.errors.ReadOnlySqlTransaction)
    tenant.refresh_from_db()
    assert tenant.nome == "Rede A"


def test_consulta_alem_do_prazo_do_job_e_cancelada() -> None:
    with pytest.raises(OperationalError) as erro:
        calcular(Espiao(("SELECT pg_sleep(30)", None)), timeout_s=0.5)

    assert isinstance(erro.value.__cause__, psycopg.errors.QueryCanceled)
    assert execucao.mensagem_para_tenant(erro.value) == (
        "o relatório excedeu o tempo limite de consulta"
    )


def test_conexao_volta_ao_normal_depois_da_parte(tenant: Tenant) -> None:
    calcular(Espiao(LIMITES_VISTOS))
    with pytest.raises(DatabaseError):
        calcular(Espiao(("SELECT 1/0", None)))

    with connection.cursor() as cursor:
        cursor.execute(LIMITES_VISTOS[0])
        assert cursor.fetchone() == ("off", 0)
        cursor.execute("UPDATE tenants SET nome = 'mudado' WHERE id = %s", [tenant.pk])
    assert connection.connection.info.transaction_status == (
        psycopg.pq.TransactionStatus.IDLE
    )


def test_parametros_da_parte_chegam_como_antes() -> None:
    """Bound client-side into the message: lists, dicts, `%` in literals,
    psycopg's composed SQL."""
    linhas = calcular(
        Espiao(
            ("SELECT %(lojas)s::text[], %(n)s + 1, 'a%%b'", {"lojas": ["L1"], "n": 2}),
            ("SELECT %s::date, 'c%%d'", ["2026-01-31"]),
            ("SELECT '50%'", None),
            (sql.SQL("SELECT {}").format(sql.Literal(7)), None),
        )
    )

    assert linhas[0] == [[["L1"], 3, "a%b"]]
    assert str(linhas[1][0][0]) == "2026-01-31"
    assert linhas[1][0][1] == "c%d"
    assert linhas[2] == [["50%"]]
    assert linhas[3] == [[7]]


def test_parte_com_cursor_de_ligacao_no_servidor_tambem_fica_limitada(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DB_PREPARE_THRESHOLD gives Django server-side binding cursors, which
    cannot send a statement with parameters beside another one."""
    connection.ensure_connection()
    monkeypatch.setattr(connection.connection, "cursor_factory", psycopg.Cursor)

    (linha,), parametrizada = calcular(
        Espiao(LIMITES_VISTOS, ("SELECT %s::int * 2", [21]))
    )

    assert linha[0] == "on"
    assert 50_000 < linha[1] <= 60_000
    assert parametrizada == [[42]]


# --- Round trips ------------------------------------------------------------------


def test_parte_de_uma_sentenca_custa_uma_ida_ao_banco() -> None:
    idas, rastro = idas_ao_banco(lambda: calcular(Espiao(LIMITES_VISTOS)))

    assert idas == 1
    assert "BEGIN" not in rastro
    assert "COMMIT" not in rastro


def com_uma_venda(tenant: Tenant) -> None:
    loja = helpers.criar_lojas(tenant, "L1")[0]
    helpers.criar_venda(
        loja=loja,
        vendedor=helpers.criar_vendedor(tenant),
        produto=helpers.criar_produto(tenant),
        data_hora=datetime(2026, 1, 10, 15, tzinfo=UTC),
        valor="10.50",
    )


def submeter(tenant: Tenant, tipo: str = "vendas", **params: Any) -> int:
    params = {"inicio": "2026-01-10", "fim": "2026-01-10", **params}
    job_id = pedidos.submeter(
        tenant_id=tenant.pk, tipo=tipo, params_brutos=params, usuario_id=None
    ).job.id
    OrmQ.objects.all().delete()  # this process is the worker
    return job_id


def test_job_pequeno_custa_tres_idas_ao_banco_no_worker(
    tenant: Tenant, ajustes: Callable[..., None]
) -> None:
    """The claim, the one chunk (its limits and statement), the finish: the
    three B3 traces (docs/historico/benchmarks.md), without the chunk store."""
    ajustes(RELATORIOS_REUSO_PARTES=False)
    com_uma_venda(tenant)
    aquecimento, job_id = submeter(tenant), submeter(tenant, agrupar="mes")
    tasks.executar_relatorio(aquecimento)  # connection and prepared statement

    idas, rastro = idas_ao_banco(lambda: tasks.executar_relatorio(job_id))

    job = helpers.job(job_id)
    assert job.status == EstadoDoJob.PRONTO
    assert job.resultado["totais"]["receita"] == "10.50"
    assert idas == 3
    assert "relatorios_reivindicar" in rastro
    assert "transaction_read_only" in rastro


def test_conclusao_e_uma_sentenca_preparada_reusada(tenant: Tenant) -> None:
    com_uma_venda(tenant)
    tasks.executar_relatorio(submeter(tenant, agrupar="dia"))
    job_id = submeter(tenant, agrupar="mes")
    with CaptureQueriesContext(connection) as capturadas:
        tasks.executar_relatorio(job_id)

    # Django's query log (DEBUG, tests) shows it with its values.
    (conclusao,) = [c["sql"] for c in capturadas if "SET status = 'pronto'" in c["sql"]]
    assert f"WHERE id = {job_id} AND" in conclusao

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans + custom_plans FROM pg_prepared_statements"
            " WHERE statement LIKE '%%SET status = ''pronto''%%'"
        )
        preparadas = cursor.fetchall()
    assert preparadas == [(2,)]


# --- The heartbeat thread ---------------------------------------------------------


@pytest.fixture
def batimento_rapido(ajustes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ajustes(RELATORIOS_BATIMENTO_S=0.1, RELATORIOS_TESTE_PAUSA_S=0.6)
    # A fresh thread for this process, with the interval above.
    monkeypatch.setattr(execucao, "_batimento", None)


def threads_de_batimento() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "batimento" and t.is_alive()]


def test_um_thread_de_batimento_por_processo_bate_durante_cada_job(
    tenant: Tenant, batimento_rapido: None
) -> None:
    antes = len(threads_de_batimento())
    jobs = [submeter(tenant, "teste_lento", fim=f"2026-01-{d}") for d in (11, 12)]

    for job_id in jobs:
        tasks.executar_relatorio(job_id)

    assert len(threads_de_batimento()) == antes + 1
    for job_id in jobs:
        job = helpers.job(job_id)
        assert job.status == EstadoDoJob.PRONTO
        # Beaten while it ran (the claim's heartbeat_em is before iniciado_em).
        assert job.iniciado_em < job.heartbeat_em <= job.concluido_em


def test_job_tirado_da_tentativa_e_parado_pelo_batimento(
    tenant: Tenant,
    batimento_rapido: None,
    ajustes: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=30)
    paradas: list[str] = []
    parar = execucao.Execucao.parar

    def espiar(self: execucao.Execucao, motivo: str) -> None:
        paradas.append(motivo)
        parar(self, motivo)

    monkeypatch.setattr(execucao.Execucao, "parar", espiar)
    job_id = submeter(tenant, "teste_lento")
    acao_do_suporte = threading.Timer(
        0.5,
        lambda: suporte.marcar_como_falhou(job_id=job_id, motivo="suporte"),
    )
    acao_do_suporte.start()
    try:
        tasks.executar_relatorio(job_id)
    finally:
        acao_do_suporte.join()

    # The heartbeat saw the loss and cancelled the 30 s statement.
    assert paradas == [execucao.PERDIDO]
    job = helpers.job(job_id)
    assert job.status == EstadoDoJob.FALHOU
    assert "suporte" in job.erro
    assert job.resultado is None


def test_job_pequeno_com_o_armazem_de_partes(tenant: Tenant) -> None:
    """With the chunk store (jobs.reuso): the chunk's snapshot opens with the
    lookup, its COMMIT goes with the store, and the run's counts are one more
    message; a later job finding the chunk runs no report SQL."""
    com_uma_venda(tenant)
    aquecimento = submeter(tenant, fim="2026-01-11")
    tasks.executar_relatorio(aquecimento)  # connection and prepared statement
    calculado = submeter(tenant)

    idas_calculado, rastro = idas_ao_banco(lambda: tasks.executar_relatorio(calculado))
    resultado = helpers.job(calculado).resultado
    # Its result expired: the same request recomputes, into the same row.
    RelatorioJob.objects.filter(pk=calculado).update(
        expira_em=datetime(2000, 1, 1, tzinfo=UTC)
    )
    reusado = submeter(tenant)
    idas_reusado, rastro_reusado = idas_ao_banco(
        lambda: tasks.executar_relatorio(reusado)
    )

    assert idas_calculado == 6
    assert "REPEATABLE READ" in rastro
    assert "INSERT INTO relatorio_partes" in rastro
    assert reusado == calculado
    assert helpers.job(reusado).resultado == resultado
    assert idas_reusado == 5
    assert "transaction_read_only" not in rastro_reusado
