"""The worker's side of a job: claim, heartbeat, progress, finish.

Every write a worker makes is fenced by its attempt (`Tentativa`: the
attempt number and the claim's timestamp, since a restart resets the number),
so a worker that lost its job can never overwrite the row. Every transition
is a guarded UPDATE that reports whether it won.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models.functions import Collate, Now

from relatorios.banco.comum import agora_do_banco, json_do_banco
from relatorios.fila import mensagens
from relatorios.jobs.vagas import despachar, despachar_do_job, enfileirar
from relatorios.models import (
    Desfecho,
    EstadoDoJob,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
)
from relatorios.notificacoes import saida

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tentativa:
    """One attempt at a job: the fence of every write its worker makes."""

    job_id: int
    numero: int
    iniciado_em: datetime


@dataclass(frozen=True)
class JobReivindicado:
    """A job a worker now owns, for one attempt."""

    tentativa: Tentativa
    tenant_id: int
    tipo: str
    params: dict[str, Any]
    fuso_horario: str
    checkpoint: dict[str, Any] | None
    # The X-Request-ID of the request behind it, for the worker's log lines.
    request_id: str | None = None
    # First attempt only: seconds from the request (or restart) to this claim.
    espera_s: float | None = None


def reivindicar(*, job_id: int, trabalhador: str = "") -> JobReivindicado | None:
    """Take a pending, due job for one attempt, or None.

    (`status = 'pendente' COLLATE "C"` in lookups by id: the same test, but one
    the planner cannot match to the pending-only partial indexes. Otherwise,
    with statistics older than a burst, it picks them, believing them nearly
    empty, and reads every pending row to find one id: 91 ms instead of
    0.2 ms per claim with 20,000 pending, measured.)

    1. Lock the job's tenant (only if the job is pending at all).
    2. One guarded UPDATE claims it if it is still pending, its retry is due,
       and the tenant runs fewer than its maximum: the count is a subquery of
       the same statement, taken after the lock, so concurrent claims of one
       tenant cannot both see a free slot.
    3. Due but refused for the limit: it loses its message (`enfileirado_em`
       NULL) and waits for the dispatch when a slot frees.
    4. Claimed: the attempt opens in the ledger (relatorio_tentativas) in the
       same transaction; `trabalhador` (host:pid) says who runs it.

    A second delivery of the same message finds nothing to claim. A job
    computed ahead (jobs.antecipacao) nobody asked for yet is claimed only in
    idle capacity: no person's job waits in the queue, and fewer than
    RELATORIOS_ANTECIPAR_MAX_EXECUTANDO such jobs run; otherwise it is
    refused as for the limit (step 3), so a person's job is claimed first,
    and its tenant is dispatched (a person's job of its own takes the slot).

    Steps 1-4 are one call of the database function `relatorios_reivindicar`
    (migration 0015): one round trip, atomic on its own.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM relatorios_reivindicar("
            "%s::bigint, %s::bigint, %s::text, %s::bigint)",
            [
                job_id,
                settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT,
                trabalhador,
                settings.RELATORIOS_ANTECIPAR_MAX_EXECUTANDO,
            ],
        )
        desfecho, *linha = cursor.fetchone()
    if desfecho == "sem_vaga":
        logger.info("job aguarda vaga do tenant", extra={"job_id": job_id})
    elif desfecho == "ocioso":
        # The slot its message held goes to a person's job of its tenant.
        logger.info("job antecipado aguarda ociosidade", extra={"job_id": job_id})
        despachar_do_job(job_id)
    if desfecho != "reivindicado":
        return None
    return JobReivindicado(
        tentativa=Tentativa(job_id=linha[0], numero=linha[1], iniciado_em=linha[2]),
        tenant_id=linha[3],
        tipo=linha[4],
        params=json_do_banco(linha[5]),
        fuso_horario=linha[6],
        checkpoint=_checkpoint(json_do_banco(linha[7]), json_do_banco(linha[8])),
        request_id=linha[9],
        espera_s=None if linha[10] is None else float(linha[10]),
    )


def batimento(*, tentativa: Tentativa) -> bool:
    """Prove the attempt is alive; False once the job is no longer this attempt's."""
    return _na_tentativa(tentativa).update(heartbeat_em=Now()) == 1


def registrar_progresso(
    *,
    tentativa: Tentativa,
    progresso: int,
    partes: list[Any],
    feitas: int,
    parcial: Any,
) -> bool:
    """Record chunk number `feitas` (from 1) as done: its partial result and
    the progress.

    `checkpoint` holds the split and the count of chunks done, so a retry can
    tell whether the chunks it would compute are the ones recorded; the
    partial result is a row of its own. One statement, constant in size
    whatever the number of chunks done.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH job AS (
                UPDATE relatorio_jobs
                   SET progresso = %(progresso)s,
                       heartbeat_em = now(),
                       checkpoint = jsonb_build_object(
                           'partes', %(partes)s::jsonb,
                           'feitas', %(feitas)s::int)
                 WHERE id = %(id)s AND status = 'executando' COLLATE "C"
                   AND tentativas = %(numero)s AND iniciado_em = %(iniciado_em)s
                RETURNING id
            )
            INSERT INTO relatorio_parciais (job_id, parte, parcial)
            SELECT id, %(feitas)s::int - 1, %(parcial)s::jsonb FROM job
            ON CONFLICT (job_id, parte) DO UPDATE SET parcial = EXCLUDED.parcial
            """,
            {
                "progresso": max(0, min(100, progresso)),
                "partes": json.dumps(partes),
                "feitas": feitas,
                "parcial": json.dumps(parcial),
                "id": tentativa.job_id,
                "numero": tentativa.numero,
                "iniciado_em": tentativa.iniciado_em,
            },
        )
        return cursor.rowcount == 1


def descartar_checkpoint(*, tentativa: Tentativa) -> bool:
    """Forget chunks that no longer match the request (e.g. stores changed)."""
    with transaction.atomic():
        if _na_tentativa(tentativa).update(checkpoint=None, progresso=0) != 1:
            return False
        apagar_parciais([tentativa.job_id])
    return True


def concluir(*, tentativa: Tentativa, resultado: Any, validade_s: int) -> bool:
    """Finish the attempt with its result, valid for `validade_s` seconds.

    Every job ends here, so it is one statement (one round trip, atomic on its
    own): the fenced update, the ledger's close, the partial results' removal,
    the notifications of the end (outbox rows for the tenant's webhooks and
    the job's email subscribers, if any), and whether the tenant has a job
    waiting for the slot this one frees. Only when notifications were written
    does a second transaction follow, dispatching them to the tenant's
    delivery slots (a dispatch lost in between is made by `saida.varrer`).

    A prepared statement (`banco.preparadas`): its text is constant, and
    parsing and planning it cost as much as running it.
    """
    from relatorios.banco import preparadas

    with preparadas.cursor() as cursor:
        cursor.execute(
            f"""
            WITH job AS (
                UPDATE relatorio_jobs
                   SET status = 'pronto', resultado = %(resultado)s::jsonb,
                       progresso = 100, checkpoint = NULL, concluido_em = now(),
                       expira_em = now() + make_interval(secs => %(validade)s),
                       erro = NULL, erro_detalhe = NULL, enfileirado_em = NULL
                 WHERE id = %(id)s AND status = 'executando' COLLATE "C"
                   AND tentativas = %(numero)s AND iniciado_em = %(iniciado_em)s
                RETURNING id, tenant_id, tipo, status, erro, concluido_em
            ), fim AS (
                SELECT * FROM job
            ), {saida.sql_entregas_de_jobs()}, historico AS (
                UPDATE relatorio_tentativas
                   SET terminado_em = now(), desfecho = 'pronto'
                 WHERE job_id = (SELECT id FROM job)
                   AND iniciado_em = %(iniciado_em)s AND terminado_em IS NULL
            ), parciais AS (
                DELETE FROM relatorio_parciais WHERE job_id = (SELECT id FROM job)
            )
            SELECT job.tenant_id,
                   EXISTS (SELECT 1 FROM relatorio_jobs w
                            WHERE w.tenant_id = job.tenant_id
                              AND w.status = 'pendente' AND w.enfileirado_em IS NULL),
                   ARRAY(SELECT id FROM novas)
              FROM job
            """,
            {
                "resultado": json.dumps(resultado, cls=DjangoJSONEncoder),
                "validade": validade_s,
                "id": tentativa.job_id,
                "numero": tentativa.numero,
                "iniciado_em": tentativa.iniciado_em,
                "url_base": settings.RELATORIOS_URL_BASE,
            },
        )
        linha = cursor.fetchone()
    if linha is None:
        return False
    tenant_id, ha_espera, entregas = linha
    if entregas:
        saida.despachar(tenant_id=tenant_id)
    if ha_espera:
        despachar(tenant_id=tenant_id)
    return True


def falhar(*, tentativa: Tentativa, erro: str, detalhe: str | None) -> bool:
    """End the attempt as failed for good: `erro` for tenants, `detalhe` for staff."""
    with transaction.atomic():
        ganhou = (
            _na_tentativa(tentativa).update(
                status=EstadoDoJob.FALHOU,
                erro=erro,
                erro_detalhe=detalhe,
                concluido_em=Now(),
                enfileirado_em=None,
            )
            == 1
        )
        if ganhou:
            _encerrar_tentativa(tentativa, Desfecho.FALHOU, erro)
            apagar_parciais([tentativa.job_id])
            saida.registrar_fim_de_jobs(job_ids=[tentativa.job_id])
    if ganhou:
        despachar_do_job(tentativa.job_id)
    return ganhou


def adiar(*, tentativa: Tentativa, erro: str, detalhe: str | None) -> str | None:
    """A transient failure: retry later with backoff, or fail after the last attempt.

    Returns the new status (`pendente` or `falhou`), or None if the fence lost.
    The delayed message is written with the row, so the retry survives a
    restart of every cluster: it is just a queue row not visible before its time.
    """
    if tentativa.numero >= settings.RELATORIOS_MAX_TENTATIVAS:
        final = f"{erro} (após {tentativa.numero} tentativas)"
        return (
            EstadoDoJob.FALHOU
            if falhar(tentativa=tentativa, erro=final, detalhe=detalhe)
            else None
        )
    quando = agora_do_banco() + timedelta(
        seconds=atraso_de_retentativa(tentativa.numero)
    )
    ganhou = _de_volta_a_fila(
        tentativa,
        Desfecho.ADIADO,
        quando=quando,
        erro=erro,
        campos={"erro": erro, "erro_detalhe": detalhe},
    )
    return EstadoDoJob.PENDENTE if ganhou else None


def devolver(*, tentativa: Tentativa) -> bool:
    """Hand a running job back at once (graceful shutdown), without using up an
    attempt: the cluster stopping is not the job failing. The checkpoint stays,
    so whoever takes it next resumes."""
    return _de_volta_a_fila(
        tentativa, Desfecho.DEVOLVIDO, campos={"tentativas": tentativa.numero - 1}
    )


def _de_volta_a_fila(
    tentativa: Tentativa,
    desfecho: str,
    *,
    campos: dict[str, Any],
    quando: datetime | None = None,
    erro: str | None = None,
) -> bool:
    """The attempt ends with the job pending again and a new message, due at
    `quando` (None: now), in one transaction; False if the fence lost."""
    with transaction.atomic():
        if (
            _na_tentativa(tentativa).update(
                status=EstadoDoJob.PENDENTE,
                proxima_tentativa_em=quando,
                enfileirado_em=Now(),
                **campos,
            )
            != 1
        ):
            return False
        _encerrar_tentativa(tentativa, desfecho, erro)
        tipo = RelatorioJob.objects.values_list("tipo", flat=True).get(
            pk=tentativa.job_id
        )
        enfileirar(job_id=tentativa.job_id, tipo=tipo, quando=quando)
    return True


def atraso_de_retentativa(numero: int) -> float:
    """The wait before attempt `numero + 1` (RELATORIOS_BACKOFF_*)."""
    return mensagens.atraso(
        numero,
        base_s=settings.RELATORIOS_BACKOFF_S,
        teto_s=settings.RELATORIOS_BACKOFF_MAX_S,
    )


def _na_tentativa(tentativa: Tentativa) -> Any:
    # The fence: only the attempt that claimed the job may write to it. The
    # status is compared under COLLATE "C" for the reason in `reivindicar`: a
    # lookup by id must never become a walk of the running-only index.
    return RelatorioJob.objects.alias(status_c=Collate("status", "C")).filter(
        pk=tentativa.job_id,
        status_c=EstadoDoJob.EXECUTANDO,
        tentativas=tentativa.numero,
        iniciado_em=tentativa.iniciado_em,
    )


def _encerrar_tentativa(
    tentativa: Tentativa, desfecho: str, erro: str | None = None
) -> None:
    RelatorioTentativa.objects.filter(
        job_id=tentativa.job_id,
        iniciado_em=tentativa.iniciado_em,
        terminado_em__isnull=True,
    ).update(terminado_em=Now(), desfecho=desfecho, erro=erro)


def apagar_parciais(job_ids: list[int]) -> None:
    # A job that finished, failed for good or starts over resumes nothing.
    if job_ids:
        RelatorioParcial.objects.filter(job_id__in=job_ids).delete()


def _checkpoint(salvo: Any, parciais: Any) -> dict[str, Any] | None:
    """The checkpoint as the worker resumes from it: the split, and the
    partial results of the chunks done, in order."""
    parciais = parciais or []
    if not salvo or salvo.get("feitas") != len(parciais):
        return None  # nothing done, or not all of it there: start over
    return {"partes": salvo.get("partes"), "parciais": parciais}


def encerrar_abertas(job_ids: list[int], desfecho: str, erro: str) -> None:
    """Close the open attempt of jobs taken from their workers by someone else."""
    if job_ids:
        RelatorioTentativa.objects.filter(
            job_id__in=job_ids, terminado_em__isnull=True
        ).update(terminado_em=Now(), desfecho=desfecho, erro=erro)
