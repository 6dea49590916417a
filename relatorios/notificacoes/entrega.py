"""Delivery: one queued task sends one outbox row, once, by email or signed POST."""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import connection, transaction
from django.db.models.functions import Now
from standardwebhooks import Webhook as Assinador

from relatorios.banco.comum import json_do_banco
from relatorios.fila import mensagens
from relatorios.models import (
    Canal,
    Entrega,
    EstadoEntrega,
    Evento,
    RelatorioJob,
    Status,
)
from relatorios.notificacoes import arquivos, destinos, vagas
from relatorios.notificacoes.destinos import DestinoRecusado, destino
from relatorios.notificacoes.email import email_do_evento
from relatorios.notificacoes.saida import iso
from relatorios.operacao import logs, metricas

logger = logging.getLogger(__name__)


# How much of a receiver's answer or error is kept for support.
TRECHO_MAX = 500


@dataclass(frozen=True)
class _Reivindicada:
    tenant_id: int
    canal: str
    evento: str
    mensagem_id: str
    destinatarios: list[str]
    payload: dict[str, Any]
    tentativa: int
    em_curso_ate: datetime
    url: str | None
    segredo: str | None
    # The X-Request-ID of the job's request, if the delivery is about a job.
    request_id: str | None = None


@dataclass(frozen=True)
class ResultadoDoEnvio:
    """One attempt's outcome: `ok`, or the answer's status and the error."""

    ok: bool
    status: int | None = None
    erro: str = ""


def entregar(*, entrega_id: int) -> str | None:
    """Send one delivery, once; returns its new state, or None if not claimed.

    1. A guarded UPDATE claims it (pending, due, dispatched to one of its
       tenant's slots, no live lease) and counts the attempt: two senders
       never send the same one at once, a stray message never sends one
       outside its tenant's slots, and a sender that dies only holds it
       until its lease runs out.
    2. Send, outside any transaction: an email, or a signed POST to the
       webhook's checked address (no redirects, connect and read timeouts).
    3. Record the outcome, fenced by the lease: `entregue`, or back to
       waiting until its backoff has elapsed, or `falhou` after
       RELATORIOS_ENTREGA_MAX_TENTATIVAS; and, in the same transaction, the
       slot it frees goes to the tenant's next delivery (`vagas`).
    """
    entrega = _reivindicar(entrega_id)
    if entrega is None:
        _acordar(entrega_id)
        return None
    contexto = logs.definir_request_id(entrega.request_id)
    try:
        try:
            desfecho = _enviar(entrega)
        except Exception as exc:  # a bug or an unexpected library error: retried
            logger.exception("entrega com erro", extra={"entrega_id": entrega_id})
            desfecho = ResultadoDoEnvio(
                ok=False, erro=trecho(f"{type(exc).__name__}: {exc}")
            )
        estado = _registrar(entrega_id, entrega, desfecho)
        metricas.entrega(
            canal=entrega.canal, evento=entrega.evento, estado=estado, ok=desfecho.ok
        )
        return estado
    finally:
        logs.restaurar_request_id(contexto)


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


def _reivindicar(entrega_id: int) -> _Reivindicada | None:
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
    return _Reivindicada(
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


def _enviar(entrega: _Reivindicada) -> ResultadoDoEnvio:
    if entrega.canal == Canal.EMAIL:
        return _enviar_email(entrega)
    if entrega.url is None or entrega.segredo is None:
        return ResultadoDoEnvio(ok=False, erro="webhook removido ou desativado")
    return postar_webhook(
        url=entrega.url,
        segredo=entrega.segredo,
        mensagem_id=entrega.mensagem_id,
        payload=entrega.payload,
        request_id=entrega.request_id,
    )


def postar_webhook(
    *,
    url: str,
    segredo: str,
    mensagem_id: str,
    payload: Mapping[str, Any],
    request_id: str | None = None,
) -> ResultadoDoEnvio:
    """One signed POST to a webhook, to the address checked just now; about a
    job, with its request's `X-Request-ID` (outside the signed body)."""
    try:
        partes, porta, endereco = destino(url)
    except DestinoRecusado as recusa:
        return ResultadoDoEnvio(ok=False, erro=f"destino recusado: {recusa}")
    corpo = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    agora = datetime.now(UTC)
    cabecalhos = {
        "Content-Type": "application/json",
        "User-Agent": "relatorios-webhooks/1",
        "webhook-id": mensagem_id,
        "webhook-timestamp": str(int(agora.timestamp())),
        "webhook-signature": Assinador(segredo).sign(mensagem_id, agora, corpo),
    }
    if request_id:
        cabecalhos[logs.CABECALHO] = request_id
    caminho = (partes.path or "/") + (f"?{partes.query}" if partes.query else "")
    timeout = settings.RELATORIOS_WEBHOOK_TIMEOUT_S
    conexao = destinos.conexao(partes, porta, endereco, timeout)
    try:
        conexao.request("POST", caminho, body=corpo.encode(), headers=cabecalhos)
        resposta = conexao.getresponse()
        # Only an excerpt: a receiver's answer says nothing we act on.
        lido = resposta.read(TRECHO_MAX).decode(errors="replace")
    except TimeoutError:
        return ResultadoDoEnvio(ok=False, erro=f"sem resposta em {timeout:g} s")
    except (OSError, http.client.HTTPException) as exc:
        return ResultadoDoEnvio(ok=False, erro=trecho(f"{type(exc).__name__}: {exc}"))
    finally:
        conexao.close()
    if 200 <= resposta.status < 300:
        return ResultadoDoEnvio(ok=True, status=resposta.status)
    return ResultadoDoEnvio(
        ok=False,
        status=resposta.status,
        erro=trecho(f"HTTP {resposta.status}: {lido}"),
    )


def _enviar_email(entrega: _Reivindicada) -> ResultadoDoEnvio:
    if not entrega.destinatarios:
        return ResultadoDoEnvio(ok=False, erro="sem destinatários")
    try:
        anexo = _anexo(entrega.payload)
    except arquivos.Ocupado as ocupado:
        # A download is building this very file: the next attempt attaches it.
        return ResultadoDoEnvio(ok=False, erro=f"anexo: {ocupado}")
    try:
        email = email_do_evento(
            entrega.payload, anexo=anexo.nome if anexo is not None else ""
        )
        mensagem = EmailMultiAlternatives(
            email.assunto,
            email.texto,
            settings.DEFAULT_FROM_EMAIL,
            to=entrega.destinatarios,
        )
        if email.html is not None:
            mensagem.attach_alternative(email.html, "text/html")
        if anexo is not None:
            mensagem.attach(
                anexo.nome, arquivos.conteudo(anexo), anexo.tipo_de_conteudo
            )
        mensagem.send(fail_silently=False)
    except Exception as exc:  # SMTP and socket errors: no traceback kept
        return ResultadoDoEnvio(ok=False, erro=trecho(f"{type(exc).__name__}: {exc}"))
    return ResultadoDoEnvio(ok=True)


def _anexo(payload: Mapping[str, Any]) -> arquivos.Guardado | None:
    """A scheduled report's stored .xlsx, when the schedule attaches it, the
    result is still the one delivered, and the file is within
    RELATORIOS_ENTREGA_ANEXO_MAX_BYTES; else None (the email carries the
    link alone).

    The file is built once per result (`arquivos`): the first recipient's
    delivery builds it, the others and every retry read it. Whether it will
    fit is estimated before building: a file that would not be attached is
    not built for the email (its link builds it if someone clicks).
    """
    if payload.get("type") != Evento.AGENDAMENTO_ENTREGUE:
        return None
    dados = payload["data"]
    if not dados.get("anexar"):
        return None
    job = (
        RelatorioJob.objects.filter(pk=dados["job"]["id"], status=Status.PRONTO)
        .only("id", "tenant_id", "tipo", "status", "params", "concluido_em")
        .first()
    )
    if job is None or job.concluido_em is None:
        return None
    if iso(job.concluido_em) != dados["job"]["concluido_em"]:
        return None  # recomputed since: the link says so
    teto = settings.RELATORIOS_ENTREGA_ANEXO_MAX_BYTES
    guardado = arquivos.guardado(job)
    if guardado is None:
        if arquivos.tamanho_estimado(job) > teto:
            return None
        try:
            guardado = arquivos.obter(job, na_web=False)
        except arquivos.GrandeDemais:
            return None
    return guardado if guardado.tamanho <= teto else None


def _registrar(
    entrega_id: int, entrega: _Reivindicada, desfecho: ResultadoDoEnvio
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
        elif entrega.tentativa >= settings.RELATORIOS_ENTREGA_MAX_TENTATIVAS:
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
            # Back to waiting, without a slot: the slot goes to the tenant's
            # next delivery. A delayed wake-up at the end of the backoff
            # dispatches it again (`_acordar`; the sweep, if it is lost).
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
            vagas.despachar(tenant_id=entrega.tenant_id)
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
    return estado


def trecho(texto: str) -> str:
    texto = " ".join(texto.split())
    return texto if len(texto) <= TRECHO_MAX else texto[: TRECHO_MAX - 1] + "…"
