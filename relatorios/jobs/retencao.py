"""Retention: finished jobs leave the tables some days after they stop mattering.

`relatorio_jobs` and its `chave` index should stay the size of the live
working set (B4: a submit was 1.83x slower with 10M finished jobs). A job is
deleted RELATORIOS_RETER_DIAS days after it stopped being useful:

- `pronto`: that many days after its result expired (`expira_em`); until
  then a new request may still be answered by recomputing into the same row,
  and support can still read it;
- `falhou`: that many days after it failed (`concluido_em`): support's window
  to read why, the same as a result's;
- `pendente`/`executando`: never, however old: they still owe an answer.

With the job go its attempts ledger, partial rows, email subscriptions,
stored files and link revocations;
schedule occurrences and notification deliveries keep their row with
`job_id` emptied (their models say SET NULL; at the database level these are
plain foreign keys, so this statement does it). django-q2's task records
(only failures are kept, Q_SAVE_LIMIT) go by their own age, and so do the
rows of clusters that stopped or were declared dead.

The cluster's supervisor calls `expurgar` periodically; it is safe with any
number of clusters running it at once.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from relatorios.notificacoes import arquivos, links

logger = logging.getLogger(__name__)

# A call deletes at most this many batches, so one supervisor pass stays
# short; a backlog (the first run on a big table) drains over several calls.
LOTES_POR_CHAMADA = 20

# Candidates are found through relatorio_jobs_criado (criado_em): a job's
# result expires after it finished, which is after it was created, so every
# candidate was created before the cut-off and no new index (no new write on
# every finish) is needed. Rows found but kept (old keys recomputed since,
# old active jobs) are the working set, read again each batch.
# FOR UPDATE SKIP LOCKED: a row another cluster's expurgar, a submit
# restarting it or a worker holds is left for a later pass; the lock re-checks
# the WHERE on the row's latest version, so a job restarted since this
# statement's snapshot is not deleted. Every statement runs once per batch in
# its own short transaction.
_APAGAR_JOBS = """
    WITH alvo AS (
        SELECT id FROM relatorio_jobs
         WHERE criado_em < %(corte)s
           AND ((status = 'pronto' AND coalesce(expira_em, concluido_em, criado_em)
                 < %(corte)s)
             OR (status = 'falhou' AND coalesce(concluido_em, criado_em)
                 < %(corte)s))
         ORDER BY criado_em
         LIMIT %(lote)s
         FOR UPDATE SKIP LOCKED
    ), tentativas AS (
        DELETE FROM relatorio_tentativas WHERE job_id IN (SELECT id FROM alvo)
    ), parciais AS (
        DELETE FROM relatorio_parciais WHERE job_id IN (SELECT id FROM alvo)
    ), inscricoes AS (
        DELETE FROM relatorio_inscricoes WHERE job_id IN (SELECT id FROM alvo)
    ), arquivos AS (
        DELETE FROM relatorio_arquivos WHERE job_id IN (SELECT id FROM alvo)
    ), revogados AS (
        DELETE FROM relatorio_links_revogados WHERE job_id IN (SELECT id FROM alvo)
    ), ocorrencias AS (
        UPDATE relatorio_ocorrencias SET job_id = NULL
         WHERE job_id IN (SELECT id FROM alvo)
    ), entregas AS (
        UPDATE relatorio_entregas SET job_id = NULL
         WHERE job_id IN (SELECT id FROM alvo)
    )
    DELETE FROM relatorio_jobs WHERE id IN (SELECT id FROM alvo)
"""

# django_q_task has no index on `stopped`; it only holds failures (hard
# stops), so the scan is of a small table.
_APAGAR_TAREFAS = """
    DELETE FROM django_q_task
     WHERE id IN (SELECT id FROM django_q_task
                   WHERE stopped < %(corte)s
                   LIMIT %(lote)s
                   FOR UPDATE SKIP LOCKED)
"""


# Clusters that stopped, or were declared dead (their queue messages already
# handed back), more than the retention window ago: the admin's list and
# /readyz read only recent ones. One silent but never declared dead stays
# until a peer declares it (fila.clusters hands back what it held first).
_APAGAR_CLUSTERS = """
    DELETE FROM relatorio_clusters
     WHERE id IN (SELECT id FROM relatorio_clusters
                   WHERE coalesce(morto_em, encerrado_em) < %(corte)s
                   LIMIT %(lote)s
                   FOR UPDATE SKIP LOCKED)
"""


# Stored report chunks (jobs.reuso) not used by any job for the retention
# window: a chunk nobody asked for in that long is as dead as a result
# expired that long ago. Scanned without an index: the per-tenant budgets
# keep the table small.
_APAGAR_PARTES = """
    DELETE FROM relatorio_partes
     WHERE id IN (SELECT id FROM relatorio_partes
                   WHERE usado_em < %(corte)s
                   LIMIT %(lote)s
                   FOR UPDATE SKIP LOCKED)
"""


def corte() -> timedelta:
    return timedelta(days=settings.RELATORIOS_RETER_DIAS)


def expurgar(*, lote: int = 1000) -> int:
    """Deletes expired finished jobs and old task records; returns jobs deleted.

    1. Per batch, one statement in its own transaction locks up to `lote`
       eligible jobs (SKIP LOCKED), deletes their ledger, partial rows and
       subscriptions, empties the references of occurrences and deliveries,
       and deletes the jobs. Locks last one batch.
    2. Stops at the first short batch, or after LOTES_POR_CHAMADA batches.
    3. Then django-q2's task records stopped before the cut-off, the rows
       of clusters stopped or declared dead before it, and the stored
       report chunks last used before it, the same way.
    4. Then stored files no longer current or older than a link's life, and
       the download limits' counters of past windows.
    """
    limite = timezone.now() - corte()
    parametros = {"corte": limite, "lote": lote}
    jobs = _em_lotes(_APAGAR_JOBS, parametros, lote)
    tarefas = _em_lotes(_APAGAR_TAREFAS, parametros, lote)
    clusters = _em_lotes(_APAGAR_CLUSTERS, parametros, lote)
    partes = _em_lotes(_APAGAR_PARTES, parametros, lote)
    # A stored file is a cache: stale ones go long before their job does.
    arquivos_velhos = arquivos.expurgar()
    links.expurgar_contagens()
    if jobs or tarefas or clusters or partes or arquivos_velhos:
        logger.info(
            "expurgo",
            extra={
                "jobs": jobs,
                "tarefas": tarefas,
                "clusters": clusters,
                "partes": partes,
                "arquivos": arquivos_velhos,
                "reter_dias": settings.RELATORIOS_RETER_DIAS,
            },
        )
    return jobs


def _em_lotes(sql: str, parametros: dict[str, Any], lote: int) -> int:
    total = 0
    for _ in range(LOTES_POR_CHAMADA):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, parametros)
            apagados = cursor.rowcount
        total += apagados
        if apagados < lote:
            break
    return total
