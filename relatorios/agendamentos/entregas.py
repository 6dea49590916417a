"""A scheduled report reaches its readers: each `pronto` occurrence delivered once.

The monthly close runs at 03:00 and is `pronto` by 03:04; nobody is at a
screen then. The checker's pass (`alertas.verificar`) calls this on every
cluster: each occurrence whose job is `pronto` is marked delivered
(`entregue_em`) and, in the same transaction, its deliveries are written to
the outbox (`notificacoes.saida.enfileirar_entrega_agendada`: an email to
each recipient, the schedule's endpoints), on time or late, after an alert
or not (docs/agendamentos.md, "Delivery").
"""

from __future__ import annotations

from django.db import connection, transaction

from relatorios.notificacoes import saida

# Occurrences marked per pass: a backlog drains over a few passes.
LOTE = 500


def entregar_prontas() -> int:
    """Mark each occurrence whose job is `pronto` delivered, once, writing its
    deliveries in the same transaction (SKIP LOCKED: a concurrent checker
    takes others; the mark's guard and the deliveries' ids keep it to one).
    Returns how many were delivered.

    The job's row is held too (FOR SHARE) until the deliveries are written:
    they are read by a second statement, and a request restarting the job
    (its result expired) that committed in between left the occurrence
    marked delivered with nothing written, for good (found by `make caos`;
    tests/caos/test_achados.py).

    The mark records how it is delivered (`entregue_como`, the schedule's
    `entrega` now), which the deliveries then follow: whether its opens can
    be seen (`aberturas`) is a fact of that delivery, not of the schedule."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            WITH prontas AS (
                SELECT o.id
                  FROM relatorio_ocorrencias o
                  JOIN relatorio_jobs j ON j.id = o.job_id
                 WHERE o.entregue_em IS NULL AND o.job_id IS NOT NULL
                   AND j.status = 'pronto'
                 ORDER BY o.id
                 LIMIT %(lote)s
                   FOR UPDATE OF o SKIP LOCKED FOR SHARE OF j SKIP LOCKED
            )
            UPDATE relatorio_ocorrencias o
               SET entregue_em = now(), entregue_como = g.entrega
              FROM prontas p, relatorio_agendamentos g
             WHERE o.id = p.id AND o.entregue_em IS NULL
               AND g.id = o.agendamento_id
            RETURNING o.id
            """,
            {"lote": LOTE},
        )
        entregues = [ocorrencia_id for (ocorrencia_id,) in cursor.fetchall()]
        for ocorrencia_id in entregues:
            saida.enfileirar_entrega_agendada(ocorrencia_id=ocorrencia_id)
    return len(entregues)
