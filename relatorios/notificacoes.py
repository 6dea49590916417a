"""Notifications: webhooks and emails about jobs and alerts, through an outbox.

An event is a row of relatorio_entregas (`Entrega`) per destination, written
in the transaction of the change it reports: never lost, never sent for a
change that rolled back. A queue message (`relatorios.tasks.entregar`) nudges
the sender; the row, not the message, is the truth, so `varrer()` replaces
messages that were lost. Sending happens only in that task: never inside a
web request nor inside the job's transaction.

`mensagem_id` is deterministic per event and destination (the `webhook-id`
header): writing the same notification twice conflicts on its unique index
instead of duplicating, and every retry carries the same id, so receivers
can deduplicate.

Webhooks are signed per the Standard Webhooks spec (`standardwebhooks`).
Their URLs must be https:// and resolve only to public addresses, checked at
registration and again at each delivery, which then connects to the address
it checked (a DNS answer that changes in between cannot redirect it).
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import json
import logging
import random
import secrets
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import SplitResult, urlsplit
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import URLValidator, validate_email
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django_q.models import OrmQ
from django_q.tasks import async_task
from standardwebhooks import Webhook as Assinador

from relatorios import logs, metricas, tipos
from relatorios.consultas import json_do_banco
from relatorios.fila import BrokerComAtraso
from relatorios.models import Canal, Entrega, Evento, Webhook
from relatorios.normalizacao import ErroDeParametro

logger = logging.getLogger(__name__)

TAREFA = "relatorios.tasks.entregar"
EVENTOS = tuple(Evento.values)
# How much of a receiver's answer or error is kept for support.
TRECHO_MAX = 500
_TIMESTAMP_SQL = """to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""


class DestinoRecusado(Exception):
    """A webhook URL this service must not call (scheme or address)."""


@dataclass(frozen=True)
class VarreduraDeEntregas:
    """What one notification sweep did."""

    inscricoes_atendidas: int
    reenfileiradas: int


# --- Webhooks ---------------------------------------------------------------------


def registrar_webhook(
    *, tenant_id: int, url: Any, eventos: Any, usuario_id: int | None
) -> Webhook:
    """Create a tenant's webhook with a new secret, returned once in `segredo`.

    ErroDeParametro names `url` or `eventos` when they are invalid; the URL
    must pass the same address rule as each delivery.
    """
    url_valida = validar_url(url)
    eventos_validos = validar_eventos(eventos)
    webhook = Webhook.objects.create(
        tenant_id=tenant_id,
        url=url_valida,
        eventos=eventos_validos,
        segredo=novo_segredo(),
        criado_por_id=usuario_id,
    )
    logger.info(
        "webhook registrado",
        extra={"webhook_id": webhook.pk, "tenant_id": tenant_id},
    )
    return webhook


def remover_webhook(*, tenant_id: int, webhook_id: int) -> bool:
    """Delete a tenant's webhook; False if it is not this tenant's.

    Its deliveries stay for the record (their `webhook` becomes empty); the
    pending ones fail at their next attempt.
    """
    removidos, _ = Webhook.objects.filter(pk=webhook_id, tenant_id=tenant_id).delete()
    return removidos > 0


def novo_segredo() -> str:
    # 24 random bytes (192 bits), in the form every Standard Webhooks library reads.
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def validar_url(url: Any) -> str:
    if not isinstance(url, str) or not url.strip():
        raise ErroDeParametro("url", "informe a URL do webhook")
    url = url.strip()
    if len(url) > 2000:
        raise ErroDeParametro("url", "URL longa demais (máximo 2000 caracteres)")
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise ErroDeParametro("url", "URL inválida") from None
    try:
        _destino(url)
    except DestinoRecusado as recusa:
        raise ErroDeParametro("url", str(recusa)) from None
    return url


def validar_eventos(eventos: Any) -> list[str]:
    if not isinstance(eventos, list) or not eventos:
        raise ErroDeParametro(
            "eventos", f"informe uma lista com um ou mais de: {', '.join(EVENTOS)}"
        )
    desconhecidos = [e for e in eventos if e not in EVENTOS]
    if desconhecidos:
        raise ErroDeParametro(
            "eventos",
            f"evento desconhecido: {desconhecidos[0]!s}; use {', '.join(EVENTOS)}",
        )
    return sorted(set(eventos))


# --- Email subscriptions (`notificar_email`) --------------------------------------


def email_para_notificar(*, valor: Any, email_do_usuario: str | None) -> str | None:
    """The address to notify for a request's `notificar_email`, or None.

    ErroDeParametro names `notificar_email` if it is not a boolean, or is
    true for a user without an email.
    """
    if not isinstance(valor, bool):
        raise ErroDeParametro("notificar_email", "deve ser true ou false")
    if not valor:
        return None
    email = (email_do_usuario or "").strip()
    try:
        validate_email(email)
    except ValidationError:
        raise ErroDeParametro(
            "notificar_email", "seu usuário não tem um e-mail cadastrado"
        ) from None
    return email


def inscrever(*, job_id: int, email: str) -> bool:
    """Ask for one email when the job ends; False if already subscribed.

    Call it for a pending or running job. If the job ends between the
    request's read and this insert, the sweep (`varrer`) sends the email.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO relatorio_inscricoes (job_id, email) VALUES (%s, %s)
            ON CONFLICT (job_id, email) DO NOTHING
            """,
            [job_id, email],
        )
        return cursor.rowcount == 1


# --- The outbox: job events -------------------------------------------------------


def sql_entregas_de_jobs(*, webhooks: bool = True) -> str:
    """CTEs that write the deliveries of jobs that just ended.

    Expects a preceding CTE `fim (id, tenant_id, tipo, status, erro,
    concluido_em)` of jobs in `pronto` or `falhou`, and the parameter
    `%(url_base)s`. Adds `novas` (RETURNING the new deliveries' ids) and
    `consumidas` (the jobs' email subscriptions, used up). Nothing is read
    beyond two index lookups when the tenant has no webhook and the job no
    subscriber, so `services.concluir` stays one cheap statement.
    """
    instante = _TIMESTAMP_SQL.format("f.concluido_em")
    payload = f"""
        jsonb_build_object(
            'type', 'job.' || f.status,
            'timestamp', {instante},
            'data', jsonb_build_object(
                'id', f.id, 'tipo', f.tipo, 'status', f.status,
                'url', %(url_base)s || '/relatorios/jobs/' || f.id,
                'concluido_em', {instante})
                || CASE WHEN f.status = 'falhou'
                        THEN jsonb_build_object('erro', f.erro)
                        ELSE '{{}}'::jsonb END)
    """
    # The end's instant tells this end from a later one of the same job
    # (a restarted job ends again): one notification per end and destination.
    fim_id = (
        "'job-' || f.id || '-' || f.status || '-'"
        " || (extract(epoch FROM f.concluido_em) * 1000000)::bigint"
    )
    colunas = "mensagem_id, tenant_id, canal, evento, webhook_id, destinatarios, "
    colunas += "payload, job_id, estado, tentativas, ultimo_erro, enfileirada_em"
    por_webhook = f"""
        SELECT {fim_id} || '-webhook-' || w.id, f.tenant_id, 'webhook',
               'job.' || f.status, w.id, '[]'::jsonb, {payload}, f.id,
               'pendente', 0, '', now()
          FROM fim f JOIN relatorio_webhooks w
            ON w.tenant_id = f.tenant_id AND w.ativo
           AND w.eventos ? ('job.' || f.status)
        UNION ALL
    """
    return f"""
        novas AS (
            INSERT INTO relatorio_entregas ({colunas})
            {por_webhook if webhooks else ""}
            SELECT {fim_id} || '-email-' || md5(lower(i.email)), f.tenant_id,
                   'email', 'job.' || f.status, NULL, jsonb_build_array(i.email),
                   {payload}, f.id, 'pendente', 0, '', now()
              FROM fim f JOIN relatorio_inscricoes i ON i.job_id = f.id
            ON CONFLICT (mensagem_id) DO NOTHING
            RETURNING id
        ), consumidas AS (
            DELETE FROM relatorio_inscricoes WHERE job_id IN (SELECT id FROM fim)
        )
    """


def registrar_fim_de_jobs(*, job_ids: list[int]) -> list[int]:
    """Write the deliveries of jobs that just ended, inside the caller's
    transaction (the one that ended them), with their queue messages.

    Jobs not in `pronto` or `falhou` are ignored. Returns the new deliveries.
    """
    if not job_ids:
        return []
    _exigir_transacao()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH fim AS (
                SELECT id, tenant_id, tipo, status, erro, concluido_em
                  FROM relatorio_jobs
                 WHERE id = ANY(%(ids)s) AND status IN ('pronto', 'falhou')
            ), {sql_entregas_de_jobs()}
            SELECT id FROM novas
            """,
            {"ids": job_ids, "url_base": settings.RELATORIOS_URL_BASE},
        )
        novas = [linha[0] for linha in cursor.fetchall()]
    enfileirar(entrega_ids=novas)
    return novas


# --- The outbox: alert events -----------------------------------------------------


def enfileirar_alerta(*, alerta_id: int, evento: str) -> int:
    """Write an alert's deliveries; call it INSIDE the transaction that just
    won the guarded insert (opened) or update (closed) of the alert.

    `alerta.aberto`: one email to the schedule's `destinatarios` plus
    RELATORIOS_EMAILS_SUPORTE, and one delivery per active webhook of the
    tenant subscribed to it; `alerta.fechado`: the webhooks only. Idempotent
    (ON CONFLICT DO NOTHING on `mensagem_id`). Returns how many were created.
    """
    if evento not in (Evento.ALERTA_ABERTO, Evento.ALERTA_FECHADO):
        raise ValueError(f"not an alert event: {evento}")
    _exigir_transacao()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT a.tenant_id, a.motivo, a.aberto_em, a.fechado_em,
                   g.id, g.nome, g.tipo, g.destinatarios,
                   o.planejado_para, o.prazo_em, j.id, j.status, t.fuso_horario
              FROM relatorio_alertas a
              JOIN tenants t ON t.id = a.tenant_id
              JOIN relatorio_ocorrencias o ON o.id = a.ocorrencia_id
              JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
              LEFT JOIN relatorio_jobs j ON j.id = o.job_id
             WHERE a.id = %s
            """,
            [alerta_id],
        )
        linha = cursor.fetchone()
    if linha is None:
        raise ValueError(f"alert {alerta_id} does not exist")
    (tenant_id, motivo, aberto_em, fechado_em, agendamento_id, nome, tipo) = linha[:7]
    destinatarios = json_do_banco(linha[7]) or []
    planejado_para, prazo_em, job_id, job_status, fuso = linha[8:]
    instante = fechado_em if evento == Evento.ALERTA_FECHADO else aberto_em
    payload = {
        "type": evento,
        "timestamp": _iso(instante or datetime.now(UTC)),
        "data": {
            "id": alerta_id,
            "motivo": motivo,
            "agendamento": {"id": agendamento_id, "nome": nome},
            "tipo": tipo,
            "planejado_para": _iso(planejado_para),
            "prazo_em": _iso(prazo_em),
            "aberto_em": _iso(aberto_em),
            "fechado_em": _iso(fechado_em) if fechado_em else None,
            "job": {"id": job_id, "status": job_status} if job_id else None,
            # The tenant's zone: the schedule's cron and deadline are on it.
            "fuso_horario": fuso,
        },
    }
    base = f"alerta-{alerta_id}-{evento.split('.')[1]}"
    linhas: list[tuple[str, str, int | None, list[str]]] = [
        (f"{base}-webhook-{webhook_id}", Canal.WEBHOOK, webhook_id, [])
        for webhook_id in Webhook.objects.filter(
            tenant_id=tenant_id, ativo=True, eventos__contains=[evento]
        ).values_list("id", flat=True)
    ]
    if evento == Evento.ALERTA_ABERTO:
        emails = _sem_repeticao([*destinatarios, *settings.RELATORIOS_EMAILS_SUPORTE])
        if emails:
            linhas.append((f"{base}-email", Canal.EMAIL, None, emails))
    if not linhas:
        return 0
    with connection.cursor() as cursor:
        # One statement for all destinations; ON CONFLICT makes a second call
        # (a retried transaction, a second checker) write nothing.
        valores = ", ".join(
            # Typed: a VALUES list whose webhook_id is NULL in every row (an
            # email-only alert) would otherwise be text.
            ["(%s, %s::bigint, %s, %s, %s::bigint, %s::jsonb, %s::jsonb, %s::bigint)"]
            * len(linhas)
        )
        parametros: list[Any] = []
        corpo = json.dumps(payload)
        for mensagem_id, canal, webhook_id, emails in linhas:
            parametros += [
                mensagem_id,
                tenant_id,
                canal,
                evento,
                webhook_id,
                json.dumps(emails),
                corpo,
                alerta_id,
            ]
        cursor.execute(
            f"""
            INSERT INTO relatorio_entregas
                   (mensagem_id, tenant_id, canal, evento, webhook_id,
                    destinatarios, payload, alerta_id,
                    estado, tentativas, ultimo_erro, enfileirada_em)
            SELECT v.*, 'pendente', 0, '', now()
              FROM (VALUES {valores}) AS v
            ON CONFLICT (mensagem_id) DO NOTHING
            RETURNING id
            """,
            parametros,
        )
        novas = [linha[0] for linha in cursor.fetchall()]
    enfileirar(entrega_ids=novas)
    return len(novas)


# --- Queue messages ---------------------------------------------------------------


def enfileirar(*, entrega_ids: list[int], quando: datetime | None = None) -> None:
    """One queue message per delivery, due at `quando` (None: now).

    The ORM broker writes through the caller's connection: inside a
    transaction, the messages commit or roll back with it.
    """
    if not entrega_ids:
        return
    opcoes: dict[str, Any] = {"timeout": prazo_de_envio_s()}
    if quando is not None:
        opcoes["broker"] = BrokerComAtraso(quando)
    for entrega_id in entrega_ids:
        async_task(
            TAREFA, entrega_id, task_name=f"entrega-{entrega_id}", q_options=opcoes
        )


def prazo_de_envio_s() -> int:
    """How long one attempt may take: the sender's lease, and the worker's hard stop."""
    return int(
        2 * settings.RELATORIOS_WEBHOOK_TIMEOUT_S
        + settings.EMAIL_TIMEOUT
        + settings.RELATORIOS_MARGEM_HARD_STOP_S
    )


def reenviar(*, entrega_id: int) -> bool:
    """Support's action: a failed (or pending) delivery goes back to pending
    now, with its attempts reset and a fresh message. False if it was already
    delivered, or a sender holds it right now."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE relatorio_entregas
               SET estado = 'pendente', tentativas = 0, proxima_em = now(),
                   enfileirada_em = now(), em_curso_ate = NULL
             WHERE id = %s AND estado IN ('pendente', 'falhou')
               AND (em_curso_ate IS NULL OR em_curso_ate < now())
            """,
            [entrega_id],
        )
        feito = cursor.rowcount == 1
        if feito:
            enfileirar(entrega_ids=[entrega_id])
    if feito:
        logger.info("entrega reenviada", extra={"entrega_id": entrega_id})
    return feito


# --- The sweep --------------------------------------------------------------------


def varrer() -> VarreduraDeEntregas:
    """One pass over what nobody else will fix; safe with any number of copies.

    The cluster's supervisor must call it on every sweep, next to
    `services.varrer()`.

    1. Subscriptions of jobs that already ended (a request subscribed while
       the job was finishing) get their email delivery; deterministic ids
       keep it to one per address and end.
    2. Lost messages: pending deliveries due for more than
       RELATORIOS_REENFILEIRAR_APOS_S, not held by a sender, whose message is
       that old and no longer waiting in the queue, get a new one (a
       duplicate is harmless: the claim is guarded).
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH fim AS (
                SELECT id, tenant_id, tipo, status, erro, concluido_em
                  FROM relatorio_jobs
                 WHERE id IN (SELECT job_id FROM relatorio_inscricoes)
                   AND status IN ('pronto', 'falhou')
            ), {sql_entregas_de_jobs(webhooks=False)}
            SELECT id FROM novas
            """,
            {"url_base": settings.RELATORIOS_URL_BASE},
        )
        atendidas = [linha[0] for linha in cursor.fetchall()]
        enfileirar(entrega_ids=atendidas)
    resultado = VarreduraDeEntregas(
        inscricoes_atendidas=len(atendidas), reenfileiradas=_reenfileirar_perdidas()
    )
    if resultado.inscricoes_atendidas or resultado.reenfileiradas:
        logger.info("varredura de entregas", extra=vars(resultado))
    return resultado


def _reenfileirar_perdidas() -> int:
    limite = settings.RELATORIOS_REENFILEIRAR_APOS_S
    antes = Now() - timedelta(seconds=limite)
    candidatas = list(
        Entrega.objects.filter(estado="pendente", proxima_em__lte=antes)
        .filter(Q(enfileirada_em__isnull=True) | Q(enfileirada_em__lt=antes))
        .filter(Q(em_curso_ate__isnull=True) | Q(em_curso_ate__lt=Now()))
        .values_list("id", flat=True)[:1000]
    )
    if not candidatas:
        return 0
    presentes = _entregas_na_fila()
    perdidas = [i for i in candidatas if i not in presentes]
    if not perdidas:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        # Guarded: a concurrent sweep that re-enqueued first moved enfileirada_em.
        cursor.execute(
            """
            UPDATE relatorio_entregas SET enfileirada_em = now()
             WHERE id = ANY(%s) AND estado = 'pendente'
               AND (enfileirada_em IS NULL
                    OR enfileirada_em < now() - make_interval(secs => %s))
            RETURNING id
            """,
            [perdidas, limite],
        )
        reenfileiradas = [linha[0] for linha in cursor.fetchall()]
        enfileirar(entrega_ids=reenfileiradas)
    for entrega_id in reenfileiradas:
        logger.warning(
            "mensagem perdida: entrega reenfileirada", extra={"entrega_id": entrega_id}
        )
    return len(reenfileiradas)


def _entregas_na_fila() -> set[int]:
    presentes: set[int] = set()
    for mensagem in OrmQ.objects.filter(lock__lte=Now()):
        tarefa = mensagem.task
        if tarefa.get("func") == TAREFA and tarefa.get("args"):
            presentes.add(int(tarefa["args"][0]))
    return presentes


# --- Delivery (the queued task) ---------------------------------------------------


@dataclass(frozen=True)
class _Reivindicada:
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

    1. A guarded UPDATE claims it (pending, due, no live lease) and counts
       the attempt: two senders never send the same one at once, and a
       sender that dies only holds it until its lease runs out.
    2. Send, outside any transaction: an email, or a signed POST to the
       webhook's checked address (no redirects, connect and read timeouts).
    3. Record the outcome, fenced by the lease: `entregue`, or a retry at
       the backoff with a delayed message in the same transaction, or
       `falhou` after RELATORIOS_ENTREGA_MAX_TENTATIVAS.
    """
    entrega = _reivindicar(entrega_id)
    if entrega is None:
        return None
    contexto = logs.definir_request_id(entrega.request_id)
    try:
        try:
            desfecho = _enviar(entrega)
        except Exception as exc:  # a bug or an unexpected library error: retried
            logger.exception("entrega com erro", extra={"entrega_id": entrega_id})
            desfecho = ResultadoDoEnvio(
                ok=False, erro=_trecho(f"{type(exc).__name__}: {exc}")
            )
        estado = _registrar(entrega_id, entrega, desfecho)
        metricas.entrega(canal=entrega.canal, estado=estado, ok=desfecho.ok)
        return estado
    finally:
        logs.restaurar_request_id(contexto)


def atraso_de_reentrega(numero: int) -> float:
    """Exponential backoff with full jitter: base * 2^(n-1) * [1, 2), capped."""
    base = settings.RELATORIOS_ENTREGA_BACKOFF_S * 2 ** max(0, numero - 1)
    return float(
        min(settings.RELATORIOS_ENTREGA_BACKOFF_MAX_S, base * (1 + random.random()))
    )


def _reivindicar(entrega_id: int) -> _Reivindicada | None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE relatorio_entregas AS e
               SET em_curso_ate = now() + make_interval(secs => %(prazo)s),
                   tentativas = e.tentativas + 1
             WHERE e.id = %(id)s AND e.estado = 'pendente' AND e.proxima_em <= now()
               AND (e.em_curso_ate IS NULL OR e.em_curso_ate < now())
            RETURNING e.canal, e.evento, e.mensagem_id, e.destinatarios, e.payload,
                      e.tentativas, e.em_curso_ate,
                      (SELECT w.url FROM relatorio_webhooks w
                        WHERE w.id = e.webhook_id AND w.ativo),
                      (SELECT w.segredo FROM relatorio_webhooks w
                        WHERE w.id = e.webhook_id AND w.ativo),
                      (SELECT j.request_id FROM relatorio_jobs j
                        WHERE j.id = e.job_id)
            """,
            {"id": entrega_id, "prazo": prazo_de_envio_s()},
        )
        linha = cursor.fetchone()
    if linha is None:
        logger.info("entrega não reivindicada", extra={"entrega_id": entrega_id})
        return None
    return _Reivindicada(
        canal=linha[0],
        evento=linha[1],
        mensagem_id=linha[2],
        destinatarios=json_do_banco(linha[3]) or [],
        payload=json_do_banco(linha[4]),
        tentativa=linha[5],
        em_curso_ate=linha[6],
        url=linha[7],
        segredo=linha[8],
        request_id=linha[9],
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
        partes, porta, endereco = _destino(url)
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
    conexao = _conexao(partes, porta, endereco, timeout)
    try:
        conexao.request("POST", caminho, body=corpo.encode(), headers=cabecalhos)
        resposta = conexao.getresponse()
        # Only an excerpt: a receiver's answer says nothing we act on.
        trecho = resposta.read(TRECHO_MAX).decode(errors="replace")
    except TimeoutError:
        return ResultadoDoEnvio(ok=False, erro=f"sem resposta em {timeout:g} s")
    except (OSError, http.client.HTTPException) as exc:
        return ResultadoDoEnvio(ok=False, erro=_trecho(f"{type(exc).__name__}: {exc}"))
    finally:
        conexao.close()
    if 200 <= resposta.status < 300:
        return ResultadoDoEnvio(ok=True, status=resposta.status)
    return ResultadoDoEnvio(
        ok=False,
        status=resposta.status,
        erro=_trecho(f"HTTP {resposta.status}: {trecho}"),
    )


def _enviar_email(entrega: _Reivindicada) -> ResultadoDoEnvio:
    if not entrega.destinatarios:
        return ResultadoDoEnvio(ok=False, erro="sem destinatários")
    assunto, texto = mensagem_de_email(entrega.payload)
    try:
        EmailMessage(
            assunto, texto, settings.DEFAULT_FROM_EMAIL, to=entrega.destinatarios
        ).send(fail_silently=False)
    except Exception as exc:  # SMTP and socket errors: no traceback kept
        return ResultadoDoEnvio(ok=False, erro=_trecho(f"{type(exc).__name__}: {exc}"))
    return ResultadoDoEnvio(ok=True)


def mensagem_de_email(payload: Mapping[str, Any]) -> tuple[str, str]:
    """Subject and plain-text body (pt-BR) of an event's email."""
    evento, dados = payload["type"], payload["data"]
    base = settings.RELATORIOS_URL_BASE
    if evento in (Evento.JOB_PRONTO, Evento.JOB_FALHOU):
        titulo = _titulo(dados["tipo"])
        pagina = f"{base}/painel/jobs/{dados['id']}/"
        if evento == Evento.JOB_PRONTO:
            return (
                f"Relatório pronto: {titulo} (#{dados['id']})",
                f"O relatório {titulo} (#{dados['id']}) está pronto.\n\n"
                f"Veja o resultado em: {pagina}\n",
            )
        return (
            f"Relatório não concluído: {titulo} (#{dados['id']})",
            f"O relatório {titulo} (#{dados['id']}) não pôde ser gerado.\n\n"
            f"Motivo: {dados.get('erro') or 'erro desconhecido'}\n\n"
            f"Você pode pedir de novo em: {pagina}\n",
        )
    agendamento = dados["agendamento"]
    nome = agendamento.get("nome") or f"agendamento {agendamento['id']}"
    fuso = dados.get("fuso_horario") or "UTC"
    if evento == Evento.ALERTA_ABERTO:
        return (
            f"Alerta: o relatório agendado {nome} não ficou pronto no prazo",
            f"O relatório agendado {nome} ({_titulo(dados['tipo'])}), planejado "
            f"para {_legivel(dados['planejado_para'], fuso)}, não ficou pronto até "
            f"{_legivel(dados['prazo_em'], fuso)}.\n\nMotivo: {dados['motivo']}\n",
        )
    return (
        f"Alerta encerrado: {nome}",
        f"O alerta do relatório agendado {nome} foi encerrado.\n",
    )


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
            cursor.execute(
                """
                UPDATE relatorio_entregas
                   SET proxima_em = now() + make_interval(secs => %(atraso)s),
                       enfileirada_em = now(), em_curso_ate = NULL,
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
                enfileirar(entrega_ids=[entrega_id], quando=linha[0])
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


# --- Destinations (SSRF) ----------------------------------------------------------


def _destino(url: str) -> tuple[SplitResult, int, str]:
    """The URL's parts, port and the one address to connect to, after checking
    every address its host resolves to; DestinoRecusado otherwise."""
    local = settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL
    partes = urlsplit(url)
    if partes.scheme != "https" and not (local and partes.scheme == "http"):
        raise DestinoRecusado("a URL deve começar com https://")
    host = partes.hostname
    if not host:
        raise DestinoRecusado("a URL não tem host")
    try:
        porta = partes.port or (443 if partes.scheme == "https" else 80)
    except ValueError:
        raise DestinoRecusado("porta inválida") from None
    try:
        respostas = socket.getaddrinfo(host, porta, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise DestinoRecusado(f"não foi possível resolver {host}") from None
    enderecos = sorted({str(resposta[4][0]) for resposta in respostas})
    if not enderecos:
        raise DestinoRecusado(f"não foi possível resolver {host}")
    for endereco in enderecos:
        if not _publico(endereco, local=local):
            raise DestinoRecusado(f"{host} resolve para um endereço não público")
    return partes, porta, enderecos[0]


def _publico(endereco: str, *, local: bool) -> bool:
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    ip = ipaddress.ip_address(endereco.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
    if local and ip.is_loopback:
        return True
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


class _ConexaoFixada(http.client.HTTPConnection):
    """HTTP to one checked address; the Host header keeps the URL's name."""

    def __init__(self, host: str, porta: int, endereco: str, timeout: float) -> None:
        super().__init__(host, porta, timeout=timeout)
        self.endereco = endereco

    def connect(self) -> None:
        self.sock = socket.create_connection((self.endereco, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _ConexaoFixadaTls(http.client.HTTPSConnection):
    """HTTPS to one checked address; SNI and the certificate check use the name."""

    def __init__(self, host: str, porta: int, endereco: str, timeout: float) -> None:
        super().__init__(
            host, porta, timeout=timeout, context=ssl.create_default_context()
        )
        self.endereco = endereco

    def connect(self) -> None:
        bruto = socket.create_connection((self.endereco, self.port), self.timeout)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            bruto, server_hostname=self.host
        )


def _conexao(
    partes: SplitResult, porta: int, endereco: str, timeout: float
) -> http.client.HTTPConnection:
    host = partes.hostname or ""
    if partes.scheme == "https":
        return _ConexaoFixadaTls(host, porta, endereco, timeout)
    return _ConexaoFixada(host, porta, endereco, timeout)


# --- Internals --------------------------------------------------------------------


def _exigir_transacao() -> None:
    # The outbox's promise (written with the change, or not at all) holds only
    # inside the transaction that makes the change.
    if not connection.in_atomic_block:
        raise RuntimeError("call inside the transaction of the change it reports")


def _iso(instante: datetime) -> str:
    return instante.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _legivel(iso: str, fuso: str) -> str:
    # On the tenant's clock, as the schedule's cron and deadline are.
    instante = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return f"{instante.astimezone(ZoneInfo(fuso)):%d/%m/%Y %H:%M} ({fuso})"


def _titulo(tipo: str) -> str:
    try:
        return tipos.obter(tipo).titulo
    except tipos.TipoDesconhecido:
        return tipo


def _trecho(texto: str) -> str:
    texto = " ".join(texto.split())
    return texto if len(texto) <= TRECHO_MAX else texto[: TRECHO_MAX - 1] + "…"


def _sem_repeticao(emails: list[Any]) -> list[str]:
    vistos: dict[str, str] = {}
    for email in emails:
        if isinstance(email, str) and email.strip():
            vistos.setdefault(email.strip().lower(), email.strip())
    return list(vistos.values())
