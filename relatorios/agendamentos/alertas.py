"""Absence alerts: an occurrence whose deadline passed without its report `pronto`.

Seed 004: "O silêncio é o sintoma, e só um alerta de ausência o detecta." The
checker (`verificar`) runs in every cluster's supervisor loop and is safe with
any number of copies:

1. It does not trust the firing: from the schedules themselves it records a
   ledger row (`nao_disparada`) for every occurrence whose deadline passed and
   that nobody fired, so a scheduler that never ran is caught too.
2. Each unsettled occurrence is settled once: `pronto` in time (an attempt
   of its job finished `pronto` between its firing and its deadline; one
   fired onto a result already `pronto` is settled by the firing itself), or
   an alert opened by a guarded INSERT (one per occurrence); a report that
   became `pronto` after its deadline still missed it (its alert opens and
   closes).
   A failed job or a refused submit opens it before the deadline: nothing
   will make that occurrence `pronto` by itself, and support gains the hours
   until the deadline.
3. Open alerts whose occurrence's job became `pronto` close by themselves.
4. Each occurrence whose job is `pronto` is delivered once
   (`agendamentos.entregas`), on time or late, after an alert or not
   (accounting wants the file either way).

An alert's email goes to its recipients one per alert, unless one pass opens
more than RELATORIOS_ALERTAS_RESUMO_APOS alerts for a tenant: then each
recipient gets one email listing them (webhooks still get one event each).

Opening and closing write their notifications (`notificacoes`, an outbox) in
the same transaction, so each alert notifies exactly once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import Now

from relatorios.agendamentos import agenda, entregas
from relatorios.banco.comum import agora_do_banco
from relatorios.jobs import pedidos, suporte
from relatorios.jobs.suporte import Acao
from relatorios.models import Agendamento, Alerta, EstadoDoJob, Evento, Ocorrencia
from relatorios.notificacoes import saida
from relatorios.operacao import metricas

logger = logging.getLogger(__name__)

LOTE = 500


@dataclass
class Verificacao:
    """What one pass of the checker did."""

    registradas: int = 0
    conferidas: int = 0
    abertos: int = 0
    fechados: int = 0
    # Occurrences whose `pronto` report was sent to the recipients.
    entregues: int = 0
    # Schedules whose check raised (logged); the others went on.
    falhas: int = 0


def verificar(*, agora: datetime | None = None) -> Verificacao:
    """One pass: record the unfired, settle the due, close the fulfilled."""
    agora = agora or agora_do_banco()
    resultado = Verificacao()
    _registrar_devidas(agora, resultado)
    _abrir(agora, resultado)
    _fechar_prontos(resultado)
    resultado.entregues += entregas.entregar_prontas()
    if any(vars(resultado).values()):
        logger.info("verificação de prazos", extra=vars(resultado))
    return resultado


def fechar(*, alerta_id: int, usuario_id: int | None, nota: str) -> Acao:
    """Staff close an alert by hand; the note and who closed it are kept."""
    nota = nota.strip()
    if not nota:
        return Acao(False, "informe uma nota")
    with transaction.atomic():
        n = Alerta.objects.filter(pk=alerta_id, fechado_em__isnull=True).update(
            fechado_em=Now(),
            fechado_por_id=usuario_id,
            nota=nota,
        )
        if n:
            saida.enfileirar_alerta(alerta_id=alerta_id, evento=Evento.ALERTA_FECHADO)
    return Acao(True) if n else Acao(False, "o alerta já está fechado")


def executar_ocorrencia(*, ocorrencia_id: int) -> Acao:
    """Support's "reexecutar" for an occurrence: its failed or expired job
    starts over, or, if it never had one, its parameters are submitted and the
    job is linked, so the alert closes by itself when the report is `pronto`."""
    ocorrencia = Ocorrencia.objects.select_related("agendamento").get(pk=ocorrencia_id)
    if ocorrencia.job_id is not None:
        return suporte.reexecutar(job_id=ocorrencia.job_id)
    if ocorrencia.params is None:
        return Acao(False, "a ocorrência não tem parâmetros")
    agendamento = ocorrencia.agendamento
    try:
        submissao = pedidos.submeter(
            tenant_id=agendamento.tenant_id,
            tipo=agendamento.tipo,
            params_brutos=ocorrencia.params,
            usuario_id=agendamento.criado_por_id,
        )
    except pedidos.LimiteDePendentes:
        return Acao(False, "o tenant está no limite de relatórios pendentes")
    except Exception as exc:  # a store deleted since: say why, do not 500
        return Acao(False, f"pedido recusado: {exc}")
    Ocorrencia.objects.filter(pk=ocorrencia_id, job__isnull=True).update(
        job_id=submissao.job.id
    )
    return Acao(True)


# --- The passes --------------------------------------------------------------------


def _registrar_devidas(agora: datetime, resultado: Verificacao) -> None:
    # Active schedules whose next occurrence's deadline has passed: the
    # partial index on proxima_verificacao keeps a pass every few seconds
    # from walking every schedule's cron.
    devidos = Agendamento.objects.select_related("tenant").filter(
        ativo=True, excluido_em__isnull=True, proxima_verificacao__lte=agora
    )
    for agendamento in devidos.order_by("proxima_verificacao")[:LOTE]:
        try:
            resultado.registradas += _registrar_do_agendamento(agendamento, agora)
        except Exception:
            # One broken schedule must not keep every other tenant's alerts
            # from opening; it is logged on every pass until fixed.
            logger.exception(
                "verificação do agendamento falhou",
                extra={"agendamento_id": agendamento.pk},
            )
            resultado.falhas += 1


def _registrar_do_agendamento(visto: Agendamento, agora: datetime) -> int:
    with transaction.atomic():
        # The schedule's row first, then its occurrences: the order pausing
        # and deleting keep (agenda.travar). One held by a pause right now is
        # skipped: the pause records its due occurrences itself. One another
        # checker already moved on is left to it.
        agendamento = agenda.travar(visto.pk, pular_travado=True)
        if (
            agendamento is None
            or not agendamento.ativo
            or agendamento.verificado_ate != visto.verificado_ate
        ):
            return 0
        ate = agora - agendamento.prazo
        fuso = agendamento.tenant.fuso_horario
        cobertos = agenda.registrar_nao_disparadas(
            agendamento, ate=ate, motivo="nenhum cluster disparou esta ocorrência"
        )
        # Bounded: a long outage of a frequent schedule is caught up over
        # several passes, oldest first.
        novo_limite = cobertos[-1] if len(cobertos) >= 1000 else ate
        seguinte = agenda.proximo_disparo(agendamento.cron, fuso, novo_limite)
        Agendamento.objects.filter(pk=agendamento.pk).update(
            verificado_ate=novo_limite,
            proxima_verificacao=seguinte + agendamento.prazo,
        )
    return len(cobertos)


def _abrir(agora: datetime, resultado: Verificacao) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # SKIP LOCKED: a concurrent checker takes other rows; the unique
        # alert per occurrence guards the rest.
        cursor.execute(
            """
            SELECT o.id, o.tenant_id, o.estado, o.motivo, j.status, j.erro,
                   j.progresso,
                   (j.status = 'pronto' AND j.concluido_em <= o.prazo_em)
                   OR EXISTS (
                       SELECT 1 FROM relatorio_tentativas t
                        WHERE t.job_id = o.job_id AND t.desfecho = 'pronto'
                          AND t.terminado_em >= o.disparada_em
                          AND t.terminado_em <= o.prazo_em)
              FROM relatorio_ocorrencias o
              LEFT JOIN relatorio_jobs j ON j.id = o.job_id
             WHERE NOT o.conferida
               AND (o.prazo_em <= %(agora)s OR o.estado = 'recusada'
                    OR j.status IN ('pronto', 'falhou'))
             ORDER BY o.prazo_em
             LIMIT %(lote)s
               FOR UPDATE OF o SKIP LOCKED
            """,
            {"agora": agora, "lote": LOTE},
        )
        linhas = cursor.fetchall()
        abertos: dict[int, list[int]] = {}
        for linha in linhas:
            ocorrencia_id, tenant_id, estado, motivo, status, erro, prog, a_tempo = (
                linha
            )
            # Kept: pronto by the deadline, judged by what happened then
            # (the attempts' ledger), not by the job's state now: a shared
            # result can have expired since and the job started over for
            # another request (found by `make caos`; tests/caos/test_achados.py).
            if a_tempo:
                resultado.conferidas += 1
            else:
                alerta_id = _abrir_alerta(
                    cursor,
                    ocorrencia_id=ocorrencia_id,
                    tenant_id=tenant_id,
                    motivo=motivo_do_alerta(estado, motivo, status, erro, prog),
                    resultado=resultado,
                )
                if alerta_id is not None:
                    abertos.setdefault(tenant_id, []).append(alerta_id)
        _emails_dos_abertos(abertos)
        if linhas:
            cursor.execute(
                "UPDATE relatorio_ocorrencias SET conferida = true WHERE id = ANY(%s)",
                [[linha[0] for linha in linhas]],
            )


def _abrir_alerta(
    cursor: Any,
    *,
    ocorrencia_id: int,
    tenant_id: int,
    motivo: str,
    resultado: Verificacao,
) -> int | None:
    """Open the occurrence's alert (once) with its webhooks; its id, or None
    if it was open already. Its emails are `_emails_dos_abertos`'."""
    cursor.execute(
        """
        INSERT INTO relatorio_alertas (ocorrencia_id, tenant_id, motivo, nota)
        VALUES (%s, %s, %s, '')
        ON CONFLICT (ocorrencia_id) DO NOTHING
        RETURNING id
        """,
        [ocorrencia_id, tenant_id, motivo],
    )
    linha = cursor.fetchone()
    if linha is None:
        return None
    saida.enfileirar_alerta(
        alerta_id=linha[0], evento=Evento.ALERTA_ABERTO, emails=False
    )
    resultado.abertos += 1
    metricas.alerta_aberto()
    logger.warning(
        "alerta aberto",
        extra={
            "evento": "alerta_aberto",
            "alerta_id": linha[0],
            "ocorrencia_id": ocorrencia_id,
            "tenant_id": tenant_id,
            "motivo": motivo,
        },
    )
    return int(linha[0])


def _emails_dos_abertos(abertos: dict[int, list[int]]) -> None:
    """The emails of the alerts one pass opened: one per alert, or, past
    RELATORIOS_ALERTAS_RESUMO_APOS for a tenant, one digest per recipient (a
    minutely schedule after a day's outage is hundreds of alerts, not
    hundreds of emails to each person)."""
    for alerta_ids in abertos.values():
        if len(alerta_ids) > settings.RELATORIOS_ALERTAS_RESUMO_APOS:
            saida.enfileirar_resumo_de_alertas(alerta_ids=alerta_ids)
            continue
        for alerta_id in alerta_ids:
            saida.enfileirar_alerta(alerta_id=alerta_id, evento=Evento.ALERTA_ABERTO)


def _fechar_prontos(resultado: Verificacao) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE relatorio_alertas a
               SET fechado_em = now(),
                   nota = 'fechado automaticamente: o relatório ficou pronto'
              FROM relatorio_ocorrencias o JOIN relatorio_jobs j ON j.id = o.job_id
             WHERE a.fechado_em IS NULL AND o.id = a.ocorrencia_id
               AND j.status = 'pronto'
            RETURNING a.id, o.job_id
            """
        )
        for alerta_id, job_id in cursor.fetchall():
            saida.enfileirar_alerta(alerta_id=alerta_id, evento=Evento.ALERTA_FECHADO)
            resultado.fechados += 1
            logger.info(
                "alerta fechado",
                extra={
                    "evento": "alerta_fechado",
                    "alerta_id": alerta_id,
                    "job_id": job_id,
                },
            )


def motivo_do_alerta(
    estado: str,
    motivo: str,
    status: str | None,
    erro: str | None,
    progresso: int | None,
) -> str:
    """Why the report is not `pronto`, in words a manager can act on."""
    if status == EstadoDoJob.PRONTO:
        # Late is a missed deadline too: it opens, then closes in the same pass.
        return "o relatório ficou pronto depois do prazo"
    if status == EstadoDoJob.FALHOU:
        return f"o relatório falhou: {erro or 'sem detalhe'}"
    if status == EstadoDoJob.EXECUTANDO:
        return f"o prazo venceu com o relatório ainda executando ({progresso or 0}%)"
    if status == EstadoDoJob.PENDENTE:
        return "o prazo venceu com o relatório ainda na fila"
    if estado == "recusada":
        return f"o pedido agendado foi recusado: {motivo}"
    if estado == "pulada":
        return f"a ocorrência foi pulada: {motivo}"
    if estado == "nao_disparada":
        return f"a ocorrência não foi disparada: {motivo}"
    return "o prazo venceu sem o relatório pronto"
