"""Delivery: one queued task sends one outbox row, once, through its channel."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import Now

from relatorios.banco.comum import json_do_banco
from relatorios.fila import mensagens
from relatorios.models import Entrega, EstadoEntrega
from relatorios.notificacoes import canais, saida, vagas
from relatorios.notificacoes.canais import Envio, ResultadoDoEnvio
from relatorios.notificacoes.canais.base import trecho
from relatorios.operacao import logs, metricas

logger = logging.getLogger(__name__)


def entregar(*, entrega_id: int) -> str | None:
    """Send one delivery, once; returns its new state, or None if not claimed.

    1. A guarded UPDATE claims it (pending, due, dispatched to one of its
       tenant's slots, no live lease) and counts the attempt: two senders
       never send the same one at once, a stray message never sends one
       outside its tenant's slots, and a sender that dies only holds it
       until its lease runs out.
    2. Send, outside any transaction, through its channel (`canais`): an
       email, a signed POST, a chat message; every POST to the address
       checked now (no redirects, connect and read timeouts).
    3. Record the outcome, fenced by the lease: `entregue`, or back to
       waiting until its backoff has elapsed, or `falhou` after
       RELATORIOS_ENTREGA_MAX_TENTATIVAS; and, in the same transaction, the
       slot it frees goes to another tenant's waiting delivery, or else to
       the tenant's next one (`vagas.liberar`).

    Before the claim, an earlier attempt that never recorded its outcome (its
    sender hard-stopped, its lease run out) is recorded as failed
    (`encerrar_abandonadas`): a receiver that holds every attempt until the
    hard stop still ends `falhou` after the maximum, and frees its slot.
    """
    if encerrar_abandonadas(entrega_id=entrega_id):
        return None
    entrega = _reivindicar(entrega_id)
    if entrega is None:
        _acordar(entrega_id)
        return None
    contexto = logs.definir_request_id(entrega.request_id)
    try:
        try:
            desfecho = canais.obter(entrega.canal).enviar(entrega)
        except Exception as exc:  # a bug or an unexpected library error: retried
            logger.exception("entrega com erro", extra={"entrega_id": entrega_id})
            desfecho = ResultadoDoEnvio(
                ok=False, erro=trecho(f"{type(exc).__name__}: {exc}")
            )
        return _registrar(entrega_id, _Posse.de(entrega), desfecho)
    finally:
        logs.restaurar_request_id(contexto)


def varrer() -> saida.VarreduraDeEntregas:
    """The deliveries' sweep: attempts whose sender never recorded them are
    recorded as failed (`encerrar_abandonadas`: a backoff, or `falhou` past
    the maximum, and their slots freed), then the outbox's (`saida.varrer`)."""
    abandonadas = encerrar_abandonadas()
    resultado = saida.varrer()
    if abandonadas:
        logger.warning(
            "entregas: tentativas abandonadas registradas",
            extra={"abandonadas": abandonadas},
        )
    return dataclasses.replace(resultado, abandonadas=abandonadas)


def atraso_de_reentrega(numero: int) -> float:
    """The wait before attempt `numero + 1` (RELATORIOS_ENTREGA_BACKOFF_*)."""
    return mensagens.atraso(
        numero,
        base_s=settings.RELATORIOS_ENTREGA_BACKOFF_S,
        teto_s=settings.RELATORIOS_ENTREGA_BACKOFF_MAX_S,
    )


def _acordar(entrega_id: int) -> None:
    """A retry's wake-up (its backoff elapsed) finds it waiting for a slot:
    dispatch its tenant's due deliveries, oldest first, which may be it."""
    tenant_id = (
        Entrega.objects.filter(
            pk=entrega_id,
            estado=EstadoEntrega.PENDENTE,
            enfileirada_em__isnull=True,
            proxima_em__lte=Now(),
        )
        .values_list("tenant_id", flat=True)
        .first()
    )
    if tenant_id is not None:
        vagas.despachar(tenant_id=tenant_id)


def _reivindicar(entrega_id: int) -> Envio | None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE relatorio_entregas AS e
               SET em_curso_ate = now() + make_interval(secs => %(prazo)s),
                   tentativas = e.tentativas + 1
             WHERE e.id = %(id)s AND e.estado = 'pendente' AND e.proxima_em <= now()
               AND e.enfileirada_em IS NOT NULL
               AND (e.em_curso_ate IS NULL OR e.em_curso_ate < now())
            RETURNING e.tenant_id, e.canal, e.evento, e.mensagem_id,
                      e.destinatarios, e.payload,
                      e.tentativas, e.em_curso_ate,
                      (SELECT w.url FROM relatorio_webhooks w
                        WHERE w.id = e.webhook_id AND w.ativo),
                      (SELECT w.segredo FROM relatorio_webhooks w
                        WHERE w.id = e.webhook_id AND w.ativo),
                      (SELECT j.request_id FROM relatorio_jobs j
                        WHERE j.id = e.job_id)
            """,
            {"id": entrega_id, "prazo": vagas.prazo_de_envio_s()},
        )
        linha = cursor.fetchone()
    if linha is None:
        logger.info("entrega não reivindicada", extra={"entrega_id": entrega_id})
        return None
    return Envio(
        tenant_id=linha[0],
        canal=linha[1],
        evento=linha[2],
        mensagem_id=linha[3],
        destinatarios=json_do_banco(linha[4]) or [],
        payload=json_do_banco(linha[5]),
        tentativa=linha[6],
        em_curso_ate=linha[7],
        url=linha[8],
        segredo=linha[9],
        request_id=linha[10],
    )


ABANDONADA = "tentativa interrompida: o envio não terminou dentro do prazo de {} s"


def encerrar_abandonadas(*, entrega_id: int | None = None) -> int:
    """Record, as a failed attempt, each attempt whose sender never recorded
    its outcome (killed by the hard stop, or by anything else) and whose
    lease has run out; only `entrega_id`'s, or (the sweep) all of them.

    The attempt was counted at its claim: it backs off and gives its slot
    up like any failed attempt, or, past RELATORIOS_ENTREGA_MAX_TENTATIVAS,
    ends `falhou` with the reason. The lease outlasts the hard stop (both
    are `vagas.prazo_de_envio_s`, the lease taken after the task started),
    so no sender is still at work; a late one's outcome is fenced off by
    the lease it no longer holds. Returns how many were recorded.
    """
    filtro = "" if entrega_id is None else "AND id = %(id)s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT id, tenant_id, canal, evento, tentativas, em_curso_ate
              FROM relatorio_entregas
             WHERE estado = 'pendente' AND em_curso_ate < now() {filtro}
             ORDER BY id LIMIT 1000
            """,
            {"id": entrega_id},
        )
        abandonadas = cursor.fetchall()
    erro = ABANDONADA.format(vagas.prazo_de_envio_s())
    registradas = 0
    for id_, tenant_id, canal, evento, tentativa, em_curso_ate in abandonadas:
        posse = _Posse(tenant_id, canal, evento, tentativa, em_curso_ate)
        estado = _registrar(id_, posse, ResultadoDoEnvio(ok=False, erro=erro))
        registradas += estado is not None
    return registradas


@dataclass(frozen=True)
class _Posse:
    """What fences an attempt's outcome: its number and lease."""

    tenant_id: int
    canal: str
    evento: str
    tentativa: int
    em_curso_ate: datetime

    @classmethod
    def de(cls, envio: Envio) -> _Posse:
        return cls(
            envio.tenant_id,
            envio.canal,
            envio.evento,
            envio.tentativa,
            envio.em_curso_ate,
        )


def _registrar(
    entrega_id: int, entrega: _Posse, desfecho: ResultadoDoEnvio
) -> str | None:
    cerca: dict[str, Any] = {
        "id": entrega_id,
        "tentativa": entrega.tentativa,
        "em_curso_ate": entrega.em_curso_ate,
        "status": desfecho.status,
        "erro": desfecho.erro,
    }
    campos = {"entrega_id": entrega_id, "tentativa": entrega.tentativa}
    with transaction.atomic(), connection.cursor() as cursor:
        vagas.travar()  # first: the slot it frees is given in this transaction
        if desfecho.ok:
            cursor.execute(
                """
                UPDATE relatorio_entregas
                   SET estado = 'entregue', entregue_em = now(), em_curso_ate = NULL,
                       ultimo_status = %(status)s, ultimo_erro = ''
                 WHERE id = %(id)s AND estado = 'pendente'
                   AND tentativas = %(tentativa)s AND em_curso_ate = %(em_curso_ate)s
                """,
                cerca,
            )
            estado = "entregue" if cursor.rowcount == 1 else None
        elif (
            desfecho.definitivo
            or entrega.tentativa >= settings.RELATORIOS_ENTREGA_MAX_TENTATIVAS
        ):
            cursor.execute(
                """
                UPDATE relatorio_entregas
                   SET estado = 'falhou', em_curso_ate = NULL,
                       ultimo_status = %(status)s, ultimo_erro = %(erro)s
                 WHERE id = %(id)s AND estado = 'pendente'
                   AND tentativas = %(tentativa)s AND em_curso_ate = %(em_curso_ate)s
                """,
                cerca,
            )
            estado = "falhou" if cursor.rowcount == 1 else None
        else:
            # Back to waiting, without a slot: the slot goes to the next
            # waiting delivery (`vagas.liberar`). A delayed wake-up at the end
            # of the backoff dispatches it again (`_acordar`; the sweep, if
            # it is lost).
            cursor.execute(
                """
                UPDATE relatorio_entregas
                   SET proxima_em = now() + make_interval(secs => %(atraso)s),
                       enfileirada_em = NULL, em_curso_ate = NULL,
                       ultimo_status = %(status)s, ultimo_erro = %(erro)s
                 WHERE id = %(id)s AND estado = 'pendente'
                   AND tentativas = %(tentativa)s AND em_curso_ate = %(em_curso_ate)s
                RETURNING proxima_em
                """,
                {**cerca, "atraso": atraso_de_reentrega(entrega.tentativa)},
            )
            linha = cursor.fetchone()
            estado = None if linha is None else "pendente"
            if linha is not None:
                vagas.enfileirar(entrega_id, quando=linha[0])
        if estado is not None:
            vagas.liberar(tenant_id=entrega.tenant_id)
    if estado is None:
        # Our lease ran out and someone else took over: their outcome stands.
        logger.warning("entrega: resultado descartado (sem posse)", extra=campos)
    elif desfecho.ok:
        logger.info("entrega entregue", extra={**campos, "canal": entrega.canal})
    else:
        logger.warning(
            "entrega falhou",
            extra={**campos, "estado": estado, "erro": desfecho.erro[:200]},
        )
    metricas.entrega(
        canal=entrega.canal, evento=entrega.evento, estado=estado, ok=desfecho.ok
    )
    return estado
