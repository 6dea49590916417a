"""Firing: every cluster's supervisor calls `disparar`; each due occurrence fires once.

Firing an occurrence means inserting its ledger row (unique per schedule and
planned time, ON CONFLICT DO NOTHING) and submitting through
`pedidos.submeter` in the same transaction: however many clusters fire at
once, one inserts the row. The times come from `agenda` (the tenant's cron on
its wall clock); what a missed slot means is the schedule's catch-up policy.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from relatorios import tipos
from relatorios.agendamentos.agenda import (
    disparos_entre,
    params_da_ocorrencia,
    proximo_disparo,
)
from relatorios.banco.comum import agora_do_banco, instante_do_banco, repetivel
from relatorios.jobs import pedidos
from relatorios.models import (
    Agendamento,
    EstadoDoJob,
    EstadoOcorrencia,
    Ocorrencia,
    Recuperacao,
)
from relatorios.tipos.normalizacao import ErroDeParametro

logger = logging.getLogger(__name__)


@repetivel
def executar_agora(*, agendamento_id: int) -> Ocorrencia:
    """Support's "executar agora": an extra occurrence planned for now, fired
    through the same path (and owing the same deadline)."""
    # A deleted schedule is history: Agendamento.DoesNotExist.
    agendamento = Agendamento.objects.select_related("tenant").get(
        pk=agendamento_id, excluido_em__isnull=True
    )
    # The statement's clock, not the transaction's: two runs asked for in one
    # transaction (an admin action over a selection) are two occurrences.
    agora = instante_do_banco()
    ocorrencia = _registrar(
        agendamento,
        agendamento.tenant.fuso_horario,
        agora,
        disparar_job=True,
        agora=agora,
        motivo="executar agora",
    )
    if ocorrencia is None:  # clock_timestamp() moves: only a replay could collide
        raise RuntimeError(f"occurrence of {agendamento_id} at {agora} exists")
    return ocorrencia


@dataclass
class Disparo:
    """What one firing pass did."""

    disparadas: int = 0
    puladas: int = 0
    recusadas: int = 0


def disparar(*, agora: datetime | None = None) -> Disparo:
    """Fire every due occurrence of every active schedule; safe in any number
    of clusters at once (each occurrence is one ledger row, inserted once).

    For each schedule whose `proximo_disparo` is due:
    1. List the planned firings since then (bounded).
    2. Those within RELATORIOS_DISPARO_TOLERANCIA_S of now are on time: fired.
       Older ones were missed (no cluster ran): under `ultima` the most recent
       missed one is fired as the catch-up, unless an on-time one exists;
       under `pular` none is. Every missed one not fired gets its row as
       `pulada`, so its alert opens at its deadline.
    3. Move `proximo_disparo` past now (guarded by its old value).
    """
    agora = agora or agora_do_banco()
    resultado = Disparo()
    devidos = Agendamento.objects.select_related("tenant").filter(
        ativo=True, excluido_em__isnull=True, proximo_disparo__lte=agora
    )
    for agendamento in devidos[:500]:
        try:
            _disparar_agendamento(agendamento, agora, resultado)
        except Exception:
            # One broken schedule must not silence the others; its missed
            # occurrences are still caught by the checker.
            logger.exception("disparo falhou", extra={"agendamento_id": agendamento.pk})
    return resultado


def _disparar_agendamento(
    agendamento: Agendamento, agora: datetime, resultado: Disparo
) -> None:
    fuso = agendamento.tenant.fuso_horario
    anterior = agendamento.proximo_disparo
    assert anterior is not None
    planejados = disparos_entre(
        agendamento.cron, fuso, anterior - timedelta(microseconds=1), agora, limite=1000
    )
    tolerancia = timedelta(seconds=settings.RELATORIOS_DISPARO_TOLERANCIA_S)
    em_dia = [t for t in planejados if agora - t <= tolerancia]
    perdidos = [t for t in planejados if agora - t > tolerancia]
    recuperar = (
        perdidos[-1]
        if perdidos and not em_dia and agendamento.recuperacao == Recuperacao.ULTIMA
        else None
    )
    for planejado in perdidos:
        disparar_job = planejado == recuperar
        ocorrencia = _registrar(
            agendamento,
            fuso,
            planejado,
            disparar_job=disparar_job,
            agora=agora,
            motivo="recuperação após parada"
            if disparar_job
            else _motivo_pulada(agendamento),
        )
        _contar(ocorrencia, resultado)
    for planejado in em_dia:
        _contar(
            _registrar(agendamento, fuso, planejado, disparar_job=True, agora=agora),
            resultado,
        )
    Agendamento.objects.filter(
        pk=agendamento.pk, ativo=True, proximo_disparo=anterior
    ).update(proximo_disparo=proximo_disparo(agendamento.cron, fuso, agora))


def _motivo_pulada(agendamento: Agendamento) -> str:
    if agendamento.recuperacao == Recuperacao.PULAR:
        return "perdida durante uma parada (política: pular)"
    return "perdida durante uma parada (política: só a mais recente)"


def _contar(ocorrencia: Ocorrencia | None, resultado: Disparo) -> None:
    if ocorrencia is None:
        return
    if ocorrencia.estado == EstadoOcorrencia.DISPARADA:
        resultado.disparadas += 1
    elif ocorrencia.estado == EstadoOcorrencia.PULADA:
        resultado.puladas += 1
    elif ocorrencia.estado == EstadoOcorrencia.RECUSADA:
        resultado.recusadas += 1


def _registrar(
    agendamento: Agendamento,
    fuso: str,
    planejado: datetime,
    *,
    disparar_job: bool,
    agora: datetime,
    motivo: str = "",
) -> Ocorrencia | None:
    """Insert the occurrence's row and, if this call inserted it and it is to
    fire, submit its job, all in one transaction; None if another cluster (or
    an earlier pass) already recorded it.

    A row the checker recorded as never fired (`nao_disparada`, no job) may
    still be adopted by the catch-up: the upsert's WHERE allows only that.
    """
    params = params_da_ocorrencia(agendamento, planejado, fuso)
    estado = EstadoOcorrencia.DISPARADA if disparar_job else EstadoOcorrencia.PULADA
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                """
                INSERT INTO relatorio_ocorrencias AS o
                       (agendamento_id, tenant_id, planejado_para, params, estado,
                        motivo, prazo_em, disparada_em, conferida)
                VALUES (%(agendamento)s, %(tenant)s, %(planejado)s, %(params)s::jsonb,
                        %(estado)s, %(motivo)s, %(prazo_em)s,
                        CASE WHEN %(disparar)s THEN %(agora)s::timestamptz END, false)
                ON CONFLICT (agendamento_id, planejado_para) DO UPDATE
                   SET estado = EXCLUDED.estado, motivo = EXCLUDED.motivo,
                       disparada_em = EXCLUDED.disparada_em
                 WHERE %(disparar)s AND o.estado = 'nao_disparada' AND o.job_id IS NULL
                RETURNING id
                """,
                {
                    "agendamento": agendamento.pk,
                    "tenant": agendamento.tenant_id,
                    "planejado": planejado,
                    "params": json.dumps(params),
                    "estado": estado,
                    "motivo": motivo,
                    "prazo_em": planejado + agendamento.prazo,
                    "disparar": disparar_job,
                    "agora": agora,
                },
            )
            linha = cursor.fetchone()
        if linha is None:
            return None
        ocorrencia_id = int(linha[0])
        if disparar_job:
            _submeter(agendamento, ocorrencia_id, params, planejado + agendamento.prazo)
    ocorrencia = Ocorrencia.objects.get(pk=ocorrencia_id)
    logger.info(
        "ocorrência registrada",
        extra={
            "agendamento_id": agendamento.pk,
            "ocorrencia_id": ocorrencia.pk,
            "estado": ocorrencia.estado,
            "job_id": ocorrencia.job_id,
            "planejado_para": planejado.isoformat(),
        },
    )
    return ocorrencia


def _submeter(
    agendamento: Agendamento,
    ocorrencia_id: int,
    params: dict[str, Any],
    prazo_em: datetime,
) -> None:
    # What a client could be refused (bad stores, the pending cap) is recorded
    # on the occurrence; anything else rolls the occurrence back with it, and
    # the next pass tries again.
    try:
        with transaction.atomic():
            submissao = pedidos.submeter(
                tenant_id=agendamento.tenant_id,
                tipo=agendamento.tipo,
                params_brutos=params,
                usuario_id=agendamento.criado_por_id,
            )
    except (ErroDeParametro, pedidos.LimiteDePendentes, tipos.TipoDesconhecido) as exc:
        Ocorrencia.objects.filter(pk=ocorrencia_id).update(
            estado=EstadoOcorrencia.RECUSADA, motivo=_recusa(exc)
        )
        return
    job = submissao.job
    # Answered by a result already pronto (and valid: the submit restarts an
    # expired one), by the deadline: served now, settled now. Left to the
    # checker, it would judge a job that may by then have expired and
    # started over for another request (found by `make caos`).
    servida = (
        job.status == EstadoDoJob.PRONTO
        and job.concluido_em is not None
        and job.concluido_em <= prazo_em
    )
    campos: dict[str, Any] = {"job_id": job.id}
    if servida:
        campos["conferida"] = True
    Ocorrencia.objects.filter(pk=ocorrencia_id).update(**campos)


def _recusa(exc: Exception) -> str:
    if isinstance(exc, ErroDeParametro):
        return f"400 ({exc.campo}): {exc.mensagem}"
    if isinstance(exc, pedidos.LimiteDePendentes):
        return f"429: {exc}"
    return f"400 (tipo): tipo de relatório desconhecido: {exc}"
