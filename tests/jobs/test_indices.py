"""Every statement the job machinery runs on relatorio_jobs has an index to use.

The statements are captured while the real `jobs` functions run, then EXPLAINed with
sequential scans disabled: a plan that still scans the table means no index
serves that query, and with millions of finished jobs it would crawl.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from relatorios.api.limites import Contagem
from relatorios.jobs import ciclo, consultas, pedidos, vagas, varredura
from relatorios.models import RelatorioJob, Tenant
from tests import helpers

pytestmark = pytest.mark.django_db

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31"}
# The raw SQL's lookups of one job by id (the claim and its guards).
POR_ID = re.compile(r'(\bj\.id|WHERE id|"relatorio_jobs"\."id") = ')


def planos(acao: Callable[[], object]) -> list[tuple[str, str]]:
    with CaptureQueriesContext(connection) as capturadas:
        acao()
    resultado = []
    for consulta in capturadas:
        sql = consulta["sql"]
        if "relatorio_jobs" not in sql or sql.startswith(("SAVEPOINT", "RELEASE")):
            continue
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}")
            plano = "\n".join(linha for (linha,) in cursor.fetchall())
            cursor.execute("RESET enable_seqscan")
        resultado.append((sql, plano))
    return resultado


def planos_aninhados(acao: Callable[[], object]) -> list[tuple[str, str]]:
    """The plans of every statement `acao` runs, the inner statements of a
    database function included (relatorios_submeter): auto_explain logs them
    and `client_min_messages` sends the log lines to this connection, with
    sequential scans disabled as in `planos`. DISCARD PLANS first, so no plan
    cached earlier in the session (with sequential scans on) is reused."""
    avisos: list[str] = []

    def guardar(diagnostico: Any) -> None:
        avisos.append(diagnostico.message_primary or "")

    with connection.cursor() as cursor:
        cursor.execute("DISCARD PLANS")
        cursor.execute("LOAD 'auto_explain'")
        cursor.execute("SET auto_explain.log_min_duration = 0")
        cursor.execute("SET auto_explain.log_nested_statements = on")
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET client_min_messages = log")
    conexao = connection.connection
    conexao.add_notice_handler(guardar)
    try:
        acao()
    finally:
        conexao.remove_notice_handler(guardar)
        with connection.cursor() as cursor:
            cursor.execute("RESET client_min_messages")
            cursor.execute("SET auto_explain.log_min_duration = -1")
            cursor.execute("RESET enable_seqscan")
            cursor.execute("DISCARD PLANS")
    resultado = []
    for aviso in avisos:
        # "duration: ... plan:\nQuery Text: <statement>\n<plan>"; a statement
        # spans lines, so both are kept whole: only a plan says "Seq Scan on".
        _, _, texto = aviso.partition("Query Text: ")
        if "relatorio_jobs" in texto:
            resultado.append((texto, texto))
    return resultado


def sem_varredura_sequencial(resultado: list[tuple[str, str]]) -> list[str]:
    return [sql for sql, plano in resultado if "Seq Scan on relatorio_jobs" in plano]


def submeter(tenant: Tenant, dia: int = 31) -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-01-01", "fim": f"2026-01-{dia:02d}"},
        usuario_id=None,
    ).job.id


def test_submit_novo_e_repetido_usam_indices(tenant: Tenant) -> None:
    novo = planos_aninhados(lambda: submeter(tenant))
    repetido = planos(lambda: submeter(tenant))
    # The read by chave; inside relatorios_submeter the occupancy, the upsert.
    assert len(novo) >= 3
    assert any("relatorio_jobs_chave_key" in plano for _, plano in novo)
    assert len(repetido) == 1
    assert sem_varredura_sequencial(novo + repetido) == []
    assert "relatorio_jobs_chave_key" in repetido[0][1]


def test_acerto_e_status_com_o_limite_da_api_usam_indices(tenant: Tenant) -> None:
    """The API's statements carry the per-token limit's UPSERT as a CTE
    (relatorios/api/limites.py): the read beside it keeps its index."""
    usuario, _ = helpers.criar_usuario(tenant)
    job_id = submeter(tenant)

    def contagem() -> Contagem:
        return Contagem(usuario_id=usuario.pk, limite=100, janela_s=60)

    acerto = planos(
        lambda: pedidos.submeter(
            tenant_id=tenant.pk,
            tipo="vendas",
            params_brutos=PEDIDO | {"fim": "2026-01-31"},
            usuario_id=usuario.pk,
            contagem=contagem(),
        )
    )
    status = planos(
        lambda: consultas.estado_do_job(
            tenant_id=tenant.pk, job_id=job_id, contagem=contagem()
        )
    )
    assert len(acerto) == len(status) == 1
    assert "relatorio_limites_api" in acerto[0][0]
    assert "relatorio_limites_api" in status[0][0]
    assert sem_varredura_sequencial(acerto + status) == []
    assert "relatorio_jobs_chave_key" in acerto[0][1]
    # (Which index the status read takes in a near-empty table is a tie; that
    # it reads one row in a long history is pinned below.)


def test_reivindicar_concluir_e_despachar_usam_indices(tenant: Tenant) -> None:
    ids = [submeter(tenant, dia) for dia in (1, 2, 3)]

    def um_ciclo() -> None:
        job = ciclo.reivindicar(job_id=ids[0])
        assert job is not None
        ciclo.batimento(tentativa=job.tentativa)
        ciclo.concluir(tentativa=job.tentativa, resultado={}, validade_s=60)

    resultado = planos_aninhados(um_ciclo)
    assert sem_varredura_sequencial(resultado) == []
    # A lookup by id reads one row: never a scan of the pending-only indexes
    # filtered by id (what the planner chose with status = 'pendente' alone).
    por_id = [plano for sql, plano in resultado if POR_ID.search(sql)]
    # The lock on the tenant and the claim (inside relatorios_reivindicar),
    # a heartbeat, the finish.
    assert len(por_id) >= 4
    assert [p for p in por_id if "relatorio_jobs_pkey" not in p] == []


def test_varredura_usa_os_indices_parciais(tenant: Tenant) -> None:
    orfao = submeter(tenant, 1)
    submeter(tenant, 2)
    ciclo.reivindicar(job_id=orfao)
    RelatorioJob.objects.filter(pk=orfao).update(
        heartbeat_em=timezone.now() - timedelta(hours=1)
    )

    resultado = planos(varredura.varrer)

    assert sem_varredura_sequencial(resultado) == []
    assert any("relatorio_jobs_executando" in plano for _, plano in resultado)


def linhas_lidas(plano: dict[str, object]) -> int:
    """Rows a plan node and its children read from tables or indexes."""
    total = 0
    if "Relation Name" in plano or "Index Name" in plano:
        total += int(plano.get("Actual Rows", 0)) * int(plano.get("Actual Loops", 1))
        total += int(plano.get("Rows Removed by Filter", 0))
        total += int(plano.get("Rows Removed by Index Recheck", 0))
    for filho in plano.get("Plans", []):  # type: ignore[attr-defined]
        total += linhas_lidas(filho)
    return total


def linhas_por_comando(acao: Callable[[], object]) -> dict[str, int]:
    """Rows each of the action's statements on relatorio_jobs read, measured by
    running it again under EXPLAIN ANALYZE in a savepoint rolled back after."""
    with CaptureQueriesContext(connection) as capturadas:
        acao()
    leituras: dict[str, int] = {}
    for consulta in capturadas:
        sql = consulta["sql"]
        if "relatorio_jobs" not in sql or sql.startswith(("SAVEPOINT", "RELEASE")):
            continue
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}")
            plano = cursor.fetchone()[0][0]["Plan"]
            transaction.set_rollback(True)
        leituras[sql] = max(leituras.get(sql, 0), linhas_lidas(plano))
    return leituras


def test_ciclo_do_job_nao_le_o_historico_do_tenant(tenant: Tenant) -> None:
    """A tenant with a long history is served like a new one: no statement of
    the job's cycle reads the tenant's finished jobs, only the few active
    rows (B4's history benchmark found a count that read them all)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO relatorio_jobs
                   (chave, tenant_id, tipo, params, status, resultado, progresso,
                    tentativas, criado_em, concluido_em, expira_em)
            SELECT md5(g::text) || md5((-g)::text), %s, 'vendas', '{}', 'pronto',
                   '{}', 100, 1, now() - interval '1 day', now(), now()
              FROM generate_series(1, 20000) g
            """,
            [tenant.pk],
        )
        cursor.execute("ANALYZE relatorio_jobs")
    ids = [submeter(tenant, dia) for dia in (1, 2, 3)]
    usuario, _ = helpers.criar_usuario(tenant)

    def um_ciclo() -> None:
        submeter(tenant, 4)
        submeter(tenant, 4)  # the dedup hit
        # ... and as the API runs them: the limit's UPSERT beside the read.
        pedidos.submeter(
            tenant_id=tenant.pk,
            tipo="vendas",
            params_brutos={"inicio": "2026-01-01", "fim": "2026-01-04"},
            usuario_id=usuario.pk,
            contagem=Contagem(usuario_id=usuario.pk, limite=100, janela_s=60),
        )
        consultas.estado_do_job(tenant_id=tenant.pk, job_id=ids[1])
        consultas.estado_do_job(
            tenant_id=tenant.pk,
            job_id=ids[1],
            contagem=Contagem(usuario_id=usuario.pk, limite=100, janela_s=60),
        )
        job = ciclo.reivindicar(job_id=ids[0])
        assert job is not None
        ciclo.batimento(tentativa=job.tentativa)
        ciclo.concluir(tentativa=job.tentativa, resultado={}, validade_s=60)
        vagas.despachar(tenant_id=tenant.pk)
        varredura.varrer()

    leituras = linhas_por_comando(um_ciclo)

    assert len(leituras) >= 11
    assert {sql: n for sql, n in leituras.items() if n > 10} == {}
