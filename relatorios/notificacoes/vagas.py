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

Across all tenants, at most RELATORIOS_MAX_ENTREGAS_EM_VOO deliveries are
in flight, one below a cluster's workers: a receiver that holds each POST
until its deadline, at several tenants at once, never holds every worker,
and a report always finds one (issue 37). It is the same slot, counted
twice in the one dispatch: a delivery needs a free slot of its tenant and a
free one overall. When a delivery ends or backs off, the slot it frees goes
first to the other tenants' due deliveries, oldest due first, then to its
own tenant's (`liberar`): a tenant with many deliveries takes turns with the
others instead of keeping the slot.

The same scheme as the jobs' slots (`jobs.vagas`), with its own lock: an
advisory lock, not a tenant's row, so a fan-out never queues behind (or in
front of) the tenant's submits and claims. One lock for every tenant's
deliveries, because the overall count is shared: every dispatch decision,
and the per-tenant email cap's count and inserts (`saida`), take it first
and hold it to the end of their short transaction, so two dispatches never
overshoot either bound and no transaction waits for it while holding
another delivery lock.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import connection, transaction

from relatorios.fila import mensagens

# pg_advisory_xact_lock(classid, objid): this class of lock, one object.
_CLASSE_DO_TRAVAMENTO = 0x52454C45  # "RELE"
_TODAS_AS_ENTREGAS = 0


def despachar(*, tenant_id: int) -> list[int]:
    """Give queue messages to the tenant's oldest due waiting deliveries, up
    to its free slots and the free ones overall; returns their ids. Joins the
    caller's transaction (the messages commit with it) or runs in its own."""
    with transaction.atomic(), connection.cursor() as cursor:
        travar()
        cursor.execute(
            """
            UPDATE relatorio_entregas SET enfileirada_em = now()
             WHERE id IN (
                SELECT id FROM relatorio_entregas
                 WHERE tenant_id = %(tenant)s AND estado = 'pendente'
                   AND enfileirada_em IS NULL AND proxima_em <= now()
                 ORDER BY proxima_em, id
                 LIMIT greatest(0, least(
                    %(vagas)s - (
                        SELECT count(*) FROM relatorio_entregas
                         WHERE tenant_id = %(tenant)s AND estado = 'pendente'
                           AND enfileirada_em IS NOT NULL),
                    %(em_voo)s - (
                        SELECT count(*) FROM relatorio_entregas
                         WHERE estado = 'pendente'
                           AND enfileirada_em IS NOT NULL))))
            RETURNING id
            """,
            {
                "tenant": tenant_id,
                "vagas": settings.RELATORIOS_MAX_ENTREGAS_POR_TENANT,
                "em_voo": settings.RELATORIOS_MAX_ENTREGAS_EM_VOO,
            },
        )
        despachadas = sorted(linha[0] for linha in cursor.fetchall())
        for entrega_id in despachadas:
            enfileirar(entrega_id)
    return despachadas


def liberar(*, tenant_id: int) -> list[int]:
    """A delivery of `tenant_id` ended or backed off: the slot it freed goes
    to the other tenants' due waiting deliveries first (the tenant with the
    oldest first), then to its own tenant's. In the caller's transaction."""
    despachadas: list[int] = []
    with transaction.atomic():
        travar()
        outros = [t for t in tenants_com_espera() if t != tenant_id]
        for vez in [*outros, tenant_id]:
            despachadas += despachar(tenant_id=vez)
            if _livres() <= 0:
                break
    return despachadas


def _livres() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT %s - count(*) FROM relatorio_entregas
             WHERE estado = 'pendente' AND enfileirada_em IS NOT NULL
            """,
            [settings.RELATORIOS_MAX_ENTREGAS_EM_VOO],
        )
        return int(cursor.fetchone()[0])


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


def travar() -> None:
    """The deliveries' lock (every tenant's), until the caller's transaction
    ends (the same session may take it again)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)",
            [_CLASSE_DO_TRAVAMENTO, _TODAS_AS_ENTREGAS],
        )


def tenants_com_espera(limite: int = 1000) -> list[int]:
    """Tenants with a due delivery waiting for a slot, the one whose oldest
    waited longest first (the sweep's list, and `liberar`'s)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT tenant_id FROM relatorio_entregas
             WHERE estado = 'pendente' AND enfileirada_em IS NULL
               AND proxima_em <= now() AND tenant_id IS NOT NULL
             GROUP BY tenant_id ORDER BY min(proxima_em), tenant_id
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
