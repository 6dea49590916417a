"""A scheduled report reaches its readers: each `pronto` occurrence delivered once.

The monthly close runs at 03:00 and is `pronto` by 03:04; nobody is at a
screen then. The checker's pass (`alertas.verificar`) calls this on every
cluster: each occurrence whose job is `pronto` is marked delivered
(`entregue_em`) and, in the same transaction, its deliveries are written to
the outbox (`notificacoes.saida.enfileirar_entrega_agendada`: an email to
each recipient, the schedule's endpoints), on time or late, after an alert
or not (docs/agendamentos.md, "Delivery"), unless the schedule skips it
(`pular`: an empty report, or the same as the last one sent).
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from relatorios.notificacoes import saida

logger = logging.getLogger(__name__)

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
    be seen (`aberturas`) is a fact of that delivery, not of the schedule.

    A schedule that skips (`pular`) a report with no lines (`linhas` empty),
    or one identical (md5 of the result) to the last one it sent, marks the
    occurrence delivered all the same, with `pulada_por` saying why, and
    writes no delivery: it counts as delivered on time (the absence checker
    judges the report's being `pronto`, not the sending)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            WITH prontas AS (
                SELECT o.id, j.resultado
                  FROM relatorio_ocorrencias o
                  JOIN relatorio_jobs j ON j.id = o.job_id
                 WHERE o.entregue_em IS NULL AND o.job_id IS NOT NULL
                   AND j.status = 'pronto'
                 ORDER BY o.id
                 LIMIT %(lote)s
                   FOR UPDATE OF o SKIP LOCKED FOR SHARE OF j SKIP LOCKED
            ), avaliadas AS (
                SELECT p.id, g.entrega,
                       g.pular IN ('vazio', 'vazio_ou_igual')
                         AND jsonb_typeof(p.resultado -> 'linhas') = 'array'
                         AND jsonb_array_length(p.resultado -> 'linhas') = 0
                         AS vazio,
                       -- Hashed only for a schedule that compares.
                       CASE WHEN g.pular IN ('igual', 'vazio_ou_igual')
                            THEN md5(p.resultado::text) END AS md5,
                       -- The last one sent: its schedule's newest delivered
                       -- occurrence not skipped (relatorio_ocorr_entregues).
                       (SELECT u.resultado_md5 FROM relatorio_ocorrencias u
                         WHERE u.agendamento_id = o.agendamento_id
                           AND u.entregue_em IS NOT NULL AND u.pulada_por IS NULL
                         ORDER BY u.entregue_em DESC, u.id DESC
                         LIMIT 1) AS md5_anterior
                  FROM prontas p
                  JOIN relatorio_ocorrencias o ON o.id = p.id
                  JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
            ), decididas AS (
                SELECT id, entrega, md5,
                       CASE WHEN vazio THEN 'vazio'
                            WHEN md5 = md5_anterior THEN 'igual' END AS pulada_por
                  FROM avaliadas
            )
            -- A skipped one was not sent: no `entregue_como` (so its link's
            -- opens are not looked for, agendamentos.aberturas).
            UPDATE relatorio_ocorrencias o
               SET entregue_em = now(), resultado_md5 = a.md5,
                   entregue_como = CASE WHEN a.pulada_por IS NULL THEN a.entrega END,
                   pulada_por = a.pulada_por
              FROM decididas a
             WHERE o.id = a.id AND o.entregue_em IS NULL
            RETURNING o.id, o.pulada_por
            """,
            {"lote": LOTE},
        )
        linhas = cursor.fetchall()
        for ocorrencia_id, pulada_por in linhas:
            if pulada_por is None:
                saida.enfileirar_entrega_agendada(ocorrencia_id=ocorrencia_id)
            else:
                logger.info(
                    "entrega pulada",
                    extra={
                        "evento": "entrega_pulada",
                        "ocorrencia_id": ocorrencia_id,
                        "motivo": pulada_por,
                    },
                )
    return len(linhas)
