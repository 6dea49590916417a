"""Tenant slots, and the job's queue message.

At most RELATORIOS_MAX_EXECUTANDO_POR_TENANT jobs of a tenant are "in
flight": running, or pending with a queue message. A job beyond that waits
without a message (`enfileirado_em` NULL) and is dispatched, oldest first,
when a slot frees. So one tenant's hundred jobs never stand in the queue in
front of another tenant's one. Slot and cap decisions are taken under a lock
on the tenant's row (FOR NO KEY UPDATE: it does not block the foreign key
checks of inserts), so concurrent submits and claims cannot overshoot.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from relatorios import tipos
from relatorios.fila import mensagens
from relatorios.models import (
    EstadoDoJob,
    RelatorioJob,
)
from relatorios.tipos.base import TipoRelatorio


def despachar(*, tenant_id: int) -> int:
    """Give queue messages to the tenant's oldest waiting jobs, up to its free
    slots: jobs a person asked for first, then those computed ahead
    (jobs.antecipacao; their claim still waits for idle capacity)."""
    with transaction.atomic(), connection.cursor() as cursor:
        travar_tenant(cursor, tenant_id)
        _, em_voo = ocupacao(cursor, tenant_id)
        livres = settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT - em_voo
        if livres <= 0:
            return 0
        cursor.execute(
            """
            UPDATE relatorio_jobs SET enfileirado_em = now()
             WHERE id IN (SELECT id FROM relatorio_jobs
                           WHERE tenant_id = %(tenant)s AND status = 'pendente'
                             AND enfileirado_em IS NULL
                             -- Computed ahead: only in idle capacity, or
                             -- the claim refuses it straight back.
                             AND (antecipado_em IS NULL OR pedido_em IS NOT NULL
                                  OR relatorios_ocioso(%(tenant)s, %(max)s))
                           ORDER BY antecipado_em IS NOT NULL
                                    AND pedido_em IS NULL,
                                    criado_em
                           LIMIT %(livres)s)
            RETURNING id, tipo
            """,
            {
                "tenant": tenant_id,
                "livres": livres,
                "max": settings.RELATORIOS_ANTECIPAR_MAX_EXECUTANDO,
            },
        )
        despachados = cursor.fetchall()
        for job_id, tipo in despachados:
            enfileirar(job_id=job_id, tipo=tipo)
    return len(despachados)


def travar_tenant(cursor: CursorWrapper, tenant_id: int) -> None:
    cursor.execute("SELECT 1 FROM tenants WHERE id = %s FOR NO KEY UPDATE", [tenant_id])


def travar_tenant_do_job(cursor: CursorWrapper, job_id: int) -> int | None:
    cursor.execute(
        """
        SELECT t.id FROM tenants t JOIN relatorio_jobs j ON j.tenant_id = t.id
         WHERE j.id = %s FOR NO KEY UPDATE OF t
        """,
        [job_id],
    )
    linha = cursor.fetchone()
    return None if linha is None else int(linha[0])


def ocupacao(cursor: CursorWrapper, tenant_id: int) -> tuple[int, int]:
    """(pending jobs, jobs in flight) of a tenant; reads the two partial indexes.

    One subquery per status, each matching one partial index's predicate: a
    single `status IN (...)` matches neither, and the planner walked the
    tenant's whole history on (tenant_id, criado_em) instead (20,000 rows read
    per submit for a tenant with 20,000 finished jobs; tests/jobs/test_indices.py).
    """
    cursor.execute(
        """
        SELECT p.pendentes, p.enfileirados + e.executando
          FROM (SELECT count(*) AS pendentes, count(enfileirado_em) AS enfileirados
                  FROM relatorio_jobs
                 WHERE tenant_id = %(tenant)s AND status = 'pendente') AS p,
               (SELECT count(*) AS executando
                  FROM relatorio_jobs
                 WHERE tenant_id = %(tenant)s AND status = 'executando') AS e
        """,
        {"tenant": tenant_id},
    )
    pendentes, em_voo = cursor.fetchone()
    return int(pendentes), int(em_voo)


def despachar_do_job(job_id: int) -> None:
    # Cheap unlocked check first: most tenants have nobody waiting.
    tenant_id = (
        RelatorioJob.objects.filter(pk=job_id)
        .values_list("tenant_id", flat=True)
        .first()
    )
    if tenant_id is None:
        return
    if RelatorioJob.objects.filter(
        tenant_id=tenant_id, status=EstadoDoJob.PENDENTE, enfileirado_em__isnull=True
    ).exists():
        despachar(tenant_id=tenant_id)


def timeout_da_tarefa(tipo_relatorio: TipoRelatorio) -> int:
    """django-q2's hard stop for a job of this type (its SQL's own timeout
    plus the margin); the caller resolved the type once."""
    return int(tipo_relatorio.timeout() + settings.RELATORIOS_MARGEM_HARD_STOP_S)


def enfileirar(*, job_id: int, tipo: str, quando: datetime | None = None) -> None:
    """The job's queue message, in the caller's transaction."""
    mensagens.enfileirar(
        mensagens.TAREFA_RELATORIO,
        job_id,
        nome=f"relatorio-{job_id}",
        timeout=timeout_da_tarefa(tipos.obter(tipo)),
        quando=quando,
    )
