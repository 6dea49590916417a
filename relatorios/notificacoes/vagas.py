"""A tenant's slots for deliveries: its fan-out never stands in front of others.

Deliveries (emails, webhooks, a scheduled report's file) are the tenant's
work as much as its reports are. A schedule with twenty recipients, or a
burst of alerts, used to put all of its queue messages on the FIFO queue at
once, and every other tenant's report waited behind them. Now at most
RELATORIOS_MAX_ENTREGAS_POR_TENANT deliveries of a tenant are "in flight"
(`enfileirada_em` set: a queue message waits for them, or a sender holds
them); the rest wait without a message, oldest due first, and get one when
a slot frees: when a delivery of the tenant ends or backs off
(`entrega._registrar`). A delivery that backs off gives its slot up; a
delayed wake-up message at the end of its backoff dispatches its tenant
again (`entrega._acordar`), and the outbox's sweep (`saida.varrer`)
dispatches whatever is due and waiting if such a message was lost.

The same scheme as the jobs' slots (`jobs.vagas`), with its own lock: an
advisory lock per tenant, not the tenant's row, so a fan-out never queues
behind (or in front of) the tenant's submits and claims.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import connection, transaction

from relatorios.fila import mensagens

# pg_advisory_xact_lock(classid, objid): this class of lock, the tenant.
_CLASSE_DO_TRAVAMENTO = 0x52454C45  # "RELE"


def despachar(*, tenant_id: int) -> list[int]:
    """Give queue messages to the tenant's oldest due waiting deliveries, up
    to its free slots; returns their ids. Joins the caller's transaction (the
    messages commit with it) or runs in its own."""
    with transaction.atomic(), connection.cursor() as cursor:
        travar(tenant_id)
        cursor.execute(
            """
            UPDATE relatorio_entregas SET enfileirada_em = now()
             WHERE id IN (
                SELECT id FROM relatorio_entregas
                 WHERE tenant_id = %(tenant)s AND estado = 'pendente'
                   AND enfileirada_em IS NULL AND proxima_em <= now()
                 ORDER BY proxima_em, id
                 LIMIT greatest(0, %(vagas)s - (
                    SELECT count(*) FROM relatorio_entregas
                     WHERE tenant_id = %(tenant)s AND estado = 'pendente'
                       AND enfileirada_em IS NOT NULL)))
            RETURNING id
            """,
            {"tenant": tenant_id, "vagas": settings.RELATORIOS_MAX_ENTREGAS_POR_TENANT},
        )
        despachadas = sorted(linha[0] for linha in cursor.fetchall())
        for entrega_id in despachadas:
            enfileirar(entrega_id)
    return despachadas


def enfileirar(entrega_id: int, *, quando: datetime | None = None) -> None:
    """The delivery's queue message, due at `quando` (None: now), in the
    caller's transaction."""
    mensagens.enfileirar(
        mensagens.TAREFA_ENTREGA,
        entrega_id,
        nome=f"entrega-{entrega_id}",
        timeout=prazo_de_envio_s(),
        quando=quando,
    )


def travar(tenant_id: int) -> None:
    """The tenant's delivery lock, until the caller's transaction ends (the
    same session may take it again)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, (%s %% 2147483647)::int)",
            [_CLASSE_DO_TRAVAMENTO, tenant_id],
        )


def tenants_com_espera(limite: int = 1000) -> list[int]:
    """Tenants with a due delivery waiting for a slot (the sweep's list)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT DISTINCT tenant_id FROM relatorio_entregas
             WHERE estado = 'pendente' AND enfileirada_em IS NULL
               AND proxima_em <= now() AND tenant_id IS NOT NULL
             LIMIT %s
            """,
            [limite],
        )
        return [linha[0] for linha in cursor.fetchall()]


def prazo_de_envio_s() -> int:
    """How long one attempt may take: the sender's lease, and the worker's
    hard stop. A POST's deadline (`canais.http.prazo_do_post_s`: twice the
    webhook timeout), an email's, the file's build, a margin."""
    return int(
        2 * settings.RELATORIOS_WEBHOOK_TIMEOUT_S
        + settings.EMAIL_TIMEOUT
        + settings.RELATORIOS_ARQUIVO_GERACAO_MAX_S
        + settings.RELATORIOS_MARGEM_HARD_STOP_S
    )
