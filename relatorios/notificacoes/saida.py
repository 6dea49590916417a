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

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Now

from relatorios.banco.comum import json_do_banco
from relatorios.fila import mensagens
from relatorios.models import (
    Entrega,
    EstadoEntrega,
    Evento,
    FormaDeEntrega,
    Webhook,
)
from relatorios.notificacoes import links, vagas
from relatorios.operacao import metricas

logger = logging.getLogger(__name__)


_TIMESTAMP_SQL = """to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""


@dataclass(frozen=True)
class VarreduraDeEntregas:
    """What one notification sweep did."""

    inscricoes_atendidas: int
    despachadas: int
    reenfileiradas: int
    # Attempts whose sender never recorded them (`entrega.varrer`).
    abandonadas: int = 0


def sql_entregas_de_jobs(*, webhooks: bool = True) -> str:
    """CTEs that write the deliveries of jobs that just ended.

    Expects a preceding CTE `fim (id, tenant_id, tipo, status, erro,
    concluido_em)` of jobs in `pronto` or `falhou`, and the parameter
    `%(url_base)s`. Adds `novas` (RETURNING the new deliveries' ids and
    tenants) and `consumidas` (the jobs' email subscriptions, used up). The
    deliveries wait for their tenant's slots: the caller dispatches them
    (`despachar`). Nothing is read beyond two index lookups when the tenant
    has no webhook and the job no subscriber, so `ciclo.concluir` stays one
    cheap statement.
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
    colunas += "payload, job_id, estado, tentativas, ultimo_erro"
    por_webhook = f"""
        SELECT {fim_id} || '-webhook-' || w.id, f.tenant_id, w.canal,
               'job.' || f.status, w.id, '[]'::jsonb, {payload}, f.id,
               'pendente', 0, ''
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
                   {payload}, f.id, 'pendente', 0, ''
              FROM fim f JOIN relatorio_inscricoes i ON i.job_id = f.id
            ON CONFLICT (mensagem_id) DO NOTHING
            RETURNING id, tenant_id
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
            SELECT id, tenant_id FROM novas
            """,
            {"ids": job_ids, "url_base": settings.RELATORIOS_URL_BASE},
        )
        novas = cursor.fetchall()
    for tenant_id in {tenant_id for _, tenant_id in novas}:
        despachar(tenant_id=tenant_id)
    return [entrega_id for entrega_id, _ in novas]


def enfileirar_alerta(
    *, alerta_id: int, evento: str, emails: bool = True, webhooks: bool = True
) -> int:
    """Write an alert's deliveries; call it INSIDE the transaction that just
    won the guarded insert (opened) or update (closed) of the alert.

    `alerta.aberto`: one email to each of the schedule's `destinatarios` and
    of RELATORIOS_EMAILS_SUPORTE (one message each: no recipient sees
    another's address, support's least of all, and a bad address fails
    alone), and one delivery per active webhook of the
    tenant subscribed to it (`emails`/`webhooks` False leave either out: the
    checker writes the emails of a pass's alerts after their webhooks, as
    one digest when they are many, `enfileirar_resumo_de_alertas`);
    `alerta.fechado`: the webhooks only. Idempotent (ON CONFLICT DO NOTHING
    on `mensagem_id`). Returns how many were created.
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
        "timestamp": iso(instante or datetime.now(UTC)),
        "data": {
            "id": alerta_id,
            "motivo": motivo,
            "agendamento": {"id": agendamento_id, "nome": nome},
            "tipo": tipo,
            "planejado_para": iso(planejado_para),
            "prazo_em": iso(prazo_em),
            "aberto_em": iso(aberto_em),
            "fechado_em": iso(fechado_em) if fechado_em else None,
            "job": {"id": job_id, "status": job_status} if job_id else None,
            # The tenant's zone: the schedule's cron and deadline are on it.
            "fuso_horario": fuso,
        },
    }
    enderecos = [*destinatarios, *settings.RELATORIOS_EMAILS_SUPORTE]
    novas = _publicar(
        chave=f"alerta-{alerta_id}-{evento.split('.')[1]}",
        tenant_id=tenant_id,
        evento=evento,
        payload=payload,
        referencia=("alerta_id", alerta_id),
        emails=enderecos if evento == Evento.ALERTA_ABERTO and emails else [],
        endpoints=_assinantes(tenant_id, evento) if webhooks else [],
    )
    return len(novas)


def enfileirar_entrega_agendada(*, ocorrencia_id: int) -> int:
    """Write a finished scheduled report's deliveries; call it INSIDE the
    transaction that marked the occurrence delivered (`entregue_em`).

    One email per address of the schedule's `destinatarios` (each with its
    own retries: a bad address holds nobody else's), and one
    `agendamento.entregue` per active webhook of the tenant the schedule
    names. The payload carries what the message says (the schedule, the
    period, the totals, the job's page) and a signed download link of that
    destination's own (`links`: removing the recipient or the webhook, or
    deleting the schedule, ends it); the .xlsx is built once, by the first
    delivery that attaches it (`arquivos`). Idempotent by `mensagem_id`;
    returns how many were created.
    """
    _exigir_transacao()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT o.tenant_id, o.planejado_para, o.params, g.id, g.nome, g.tipo,
                   g.destinatarios, coalesce(o.entregue_como, g.entrega),
                   g.webhooks, j.id,
                   coalesce(j.concluido_em, j.criado_em),
                   j.resultado -> 'totais', t.fuso_horario
              FROM relatorio_ocorrencias o
              JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
              JOIN relatorio_jobs j ON j.id = o.job_id AND j.status = 'pronto'
              JOIN tenants t ON t.id = o.tenant_id
             WHERE o.id = %s
            """,
            [ocorrencia_id],
        )
        linha = cursor.fetchone()
    if linha is None:
        return 0
    (tenant_id, planejado_para, params, agendamento_id, nome, tipo) = linha[:6]
    destinatarios = _sem_repeticao(json_do_banco(linha[6]) or [])
    forma, webhook_ids, job_id, concluido_em, totais, fuso = linha[7:]
    params = json_do_banco(params) or {}
    base = settings.RELATORIOS_URL_BASE
    payload: dict[str, Any] = {
        "type": Evento.AGENDAMENTO_ENTREGUE,
        "timestamp": iso(datetime.now(UTC)),
        "data": {
            "agendamento": {"id": agendamento_id, "nome": nome},
            "ocorrencia": {"id": ocorrencia_id, "planejado_para": iso(planejado_para)},
            "tipo": tipo,
            "periodo": {"inicio": params.get("inicio"), "fim": params.get("fim")},
            "totais": json_do_banco(totais) or {},
            "job": {
                "id": job_id,
                "url": f"{base}/relatorios/jobs/{job_id}",
                "pagina": f"{base}/painel/jobs/{job_id}/",
                "concluido_em": iso(concluido_em),
            },
            "anexar": forma == FormaDeEntrega.ANEXO,
            "fuso_horario": fuso,
        },
    }

    def com_link(destino: str) -> dict[str, Any]:
        link = links.url(
            job_id=job_id,
            tenant_id=tenant_id,
            concluido_em=concluido_em,
            ocorrencia_id=ocorrencia_id,
            destino=destino,
        )
        expira_em = iso(datetime.now(UTC) + links.validade())
        dados = dict(payload["data"])
        dados["download"] = {"url": link, "expira_em": expira_em}
        return {**payload, "data": dados}

    novas = _publicar(
        chave=f"ocorrencia-{ocorrencia_id}-entregue",
        tenant_id=tenant_id,
        evento=Evento.AGENDAMENTO_ENTREGUE,
        payload=payload,
        referencia=("ocorrencia_id", ocorrencia_id),
        emails=destinatarios,
        endpoints=_nomeados(tenant_id, json_do_banco(webhook_ids) or []),
        com_link=com_link,
    )
    logger.info(
        "agendamento entregue",
        extra={
            "agendamento_id": agendamento_id,
            "ocorrencia_id": ocorrencia_id,
            "job_id": job_id,
            "entregas": len(novas),
        },
    )
    return len(novas)


def enfileirar_resumo_de_alertas(*, alerta_ids: list[int]) -> int:
    """One email per recipient listing these alerts, instead of one each; call
    it INSIDE the transaction that opened them (the checker's pass).

    A recipient gets the alerts of the schedules that name it; the support
    addresses (RELATORIOS_EMAILS_SUPORTE) get all of them. Webhooks are not
    written here: they still get one `alerta.aberto` per alert. Returns how
    many emails were written.
    """
    if not alerta_ids:
        return 0
    _exigir_transacao()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT a.id, a.tenant_id, a.motivo, o.planejado_para, o.prazo_em,
                   g.id, g.nome, g.tipo, g.destinatarios, t.fuso_horario
              FROM relatorio_alertas a
              JOIN tenants t ON t.id = a.tenant_id
              JOIN relatorio_ocorrencias o ON o.id = a.ocorrencia_id
              JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
             WHERE a.id = ANY(%s)
             ORDER BY a.tenant_id, o.planejado_para, a.id
            """,
            [alerta_ids],
        )
        alertas = cursor.fetchall()
    por_destino: dict[tuple[int, str], list[dict[str, Any]]] = {}
    fusos: dict[int, str] = {}
    for (
        alerta_id,
        tenant_id,
        motivo,
        planejado,
        prazo,
        g_id,
        nome,
        tipo,
        dest,
        fuso,
    ) in alertas:
        fusos[tenant_id] = fuso
        item = {
            "id": alerta_id,
            "motivo": motivo,
            "agendamento": {"id": g_id, "nome": nome},
            "tipo": tipo,
            "planejado_para": iso(planejado),
            "prazo_em": iso(prazo),
        }
        emails = [*(json_do_banco(dest) or []), *settings.RELATORIOS_EMAILS_SUPORTE]
        for email in _sem_repeticao(emails):
            por_destino.setdefault((tenant_id, email.lower()), []).append(item)
    escritas = 0
    assinatura = _md5(",".join(str(i) for i in sorted(alerta_ids)))
    for (tenant_id, email), itens in por_destino.items():
        payload = {
            "type": Evento.ALERTAS_RESUMO,
            "timestamp": iso(datetime.now(UTC)),
            "data": {"alertas": itens, "fuso_horario": fusos[tenant_id]},
        }
        escritas += len(
            _publicar(
                chave=f"alertas-{assinatura}",
                tenant_id=tenant_id,
                evento=Evento.ALERTAS_RESUMO,
                payload=payload,
                referencia=None,
                emails=[email],
            )
        )
    return escritas


def _publicar(
    *,
    chave: str,
    tenant_id: int,
    evento: str,
    payload: dict[str, Any],
    referencia: tuple[str, int] | None,
    emails: list[str],
    endpoints: Sequence[tuple[int, str]] = (),
    com_link: Callable[[str], dict[str, Any]] | None = None,
) -> list[int]:
    """The one place an event fans out to its destinations: one delivery per
    address (each its own retries; nobody sees another's address) and one
    per endpoint (a webhook or a chat, through its channel), ids derived
    from `chave`; with `com_link`, each gets a payload with a download link
    of its own. One statement for all; ON CONFLICT makes a second call (a
    retried transaction, a second checker) write nothing.

    (A job's end fans out in SQL, inside the statement that ends it:
    `sql_entregas_de_jobs`, the same rule for the same endpoints.)
    """
    linhas = [
        _Destino(
            f"{chave}-email-{_md5(email)}",
            "email",
            emails=[email],
            payload=com_link(links.destino_email(email)) if com_link else None,
        )
        for email in _sem_repeticao(emails)
    ]
    linhas += [
        _Destino(
            f"{chave}-webhook-{endpoint_id}",
            canal,
            webhook_id=endpoint_id,
            payload=com_link(links.destino_webhook(endpoint_id)) if com_link else None,
        )
        for endpoint_id, canal in endpoints
    ]
    return _inserir(
        linhas,
        tenant_id=tenant_id,
        evento=evento,
        payload=payload,
        referencia=referencia,
    )


def _assinantes(tenant_id: int, evento: str) -> list[tuple[int, str]]:
    """The tenant's active endpoints subscribed to `evento`: (id, canal)."""
    return list(
        Webhook.objects.filter(
            tenant_id=tenant_id, ativo=True, eventos__contains=[evento]
        ).values_list("id", "canal")
    )


def _nomeados(tenant_id: int, ids: list[int]) -> list[tuple[int, str]]:
    """The tenant's active endpoints among `ids` (a schedule names them)."""
    return list(
        Webhook.objects.filter(tenant_id=tenant_id, ativo=True, pk__in=ids)
        .order_by("id")
        .values_list("id", "canal")
    )


@dataclass(frozen=True)
class _Destino:
    """One delivery of an event: its id, channel and destination, and its own
    payload when it differs from the event's (a link of its own)."""

    mensagem_id: str
    canal: str
    webhook_id: int | None = None
    emails: list[str] = field(default_factory=list)
    payload: dict[str, Any] | None = None


def _inserir(
    linhas: list[_Destino],
    *,
    tenant_id: int,
    evento: str,
    payload: dict[str, Any],
    referencia: tuple[str, int] | None,
) -> list[int]:
    """Insert the deliveries of one event, pending, and dispatch them to the
    tenant's free slots; a repeated mensagem_id writes nothing.

    Emails past the tenant's daily cap (RELATORIOS_MAX_EMAILS_POR_TENANT_DIA,
    counted over the last 24 hours, support's own addresses aside) are
    written `falhou` with the reason: support sees them, and may resend.
    """
    if not linhas:
        return []
    coluna, valor = referencia if referencia else ("alerta_id", None)
    vagas.travar()  # the cap's count and the inserts, one at a time
    cota = _cota_de_emails(tenant_id)
    valores = ", ".join(
        # Typed: a VALUES list whose webhook_id is NULL in every row would
        # otherwise be text.
        [
            "(%s, %s::bigint, %s, %s, %s::bigint, %s::jsonb, %s::jsonb, %s::bigint,"
            " %s, %s)"
        ]
        * len(linhas)
    )
    parametros: list[Any] = []
    corpo = json.dumps(payload)
    suporte = {e.lower() for e in settings.RELATORIOS_EMAILS_SUPORTE}
    for linha in linhas:
        estado, erro = EstadoEntrega.PENDENTE, ""
        if linha.canal == "email" and not {e.lower() for e in linha.emails} <= suporte:
            if cota <= 0:
                estado, erro = EstadoEntrega.FALHOU, _ACIMA_DA_COTA
            cota -= 1
        parametros += [
            linha.mensagem_id,
            tenant_id,
            linha.canal,
            evento,
            linha.webhook_id,
            json.dumps(linha.emails),
            corpo if linha.payload is None else json.dumps(linha.payload),
            valor,
            estado,
            erro,
        ]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO relatorio_entregas
                   (mensagem_id, tenant_id, canal, evento, webhook_id,
                    destinatarios, payload, {coluna}, estado, ultimo_erro, tentativas)
            SELECT v.*, 0 FROM (VALUES {valores}) AS v
            ON CONFLICT (mensagem_id) DO NOTHING
            RETURNING id, estado
            """,
            parametros,
        )
        escritas = cursor.fetchall()
    recusadas = sum(1 for _, estado in escritas if estado == EstadoEntrega.FALHOU)
    if recusadas:
        metricas.emails_acima_da_cota(recusadas)
        logger.warning(
            "cota diária de e-mails do tenant atingida",
            extra={"tenant_id": tenant_id, "evento": evento, "recusadas": recusadas},
        )
    despachar(tenant_id=tenant_id)
    return [entrega_id for entrega_id, _ in escritas]


_ACIMA_DA_COTA = "limite diário de e-mails do cliente atingido"


def _cota_de_emails(tenant_id: int) -> int:
    """How many more emails the tenant may send in this 24-hour window.

    Counted: emails to addresses the tenant typed (a schedule's recipients).
    Not counted: the ones the cap refused, support's own addresses, and a
    job's end to its subscriber (a user's own address, one per request).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*) FROM relatorio_entregas
             WHERE tenant_id = %(tenant)s AND canal = 'email'
               AND criado_em > now() - interval '24 hours'
               AND evento NOT IN ('job.pronto', 'job.falhou')
               AND ultimo_erro <> %(cota)s
               AND NOT lower(destinatarios ->> 0) = ANY(%(suporte)s)
            """,
            {
                "tenant": tenant_id,
                "cota": _ACIMA_DA_COTA,
                "suporte": [e.lower() for e in settings.RELATORIOS_EMAILS_SUPORTE],
            },
        )
        usados = int(cursor.fetchone()[0])
    return settings.RELATORIOS_MAX_EMAILS_POR_TENANT_DIA - usados


def despachar(*, tenant_id: int) -> list[int]:
    """Queue messages for the tenant's waiting deliveries, up to its slots
    (`vagas`); in the caller's transaction."""
    return vagas.despachar(tenant_id=tenant_id)


def reenviar(*, entrega_id: int) -> bool:
    """Support's action: a failed (or pending) delivery goes back to pending
    now, with its attempts reset, and waits for its tenant's slot (past the
    daily email cap too: support decided). False if it was already
    delivered, or a sender holds it right now."""
    with transaction.atomic(), connection.cursor() as cursor:
        vagas.travar()  # before the row: a dispatch holds it, then waits for rows
        cursor.execute(
            """
            UPDATE relatorio_entregas
               SET estado = 'pendente', tentativas = 0, proxima_em = now(),
                   enfileirada_em = NULL, em_curso_ate = NULL
             WHERE id = %s AND estado IN ('pendente', 'falhou')
               AND (em_curso_ate IS NULL OR em_curso_ate < now())
            RETURNING tenant_id
            """,
            [entrega_id],
        )
        linha = cursor.fetchone()
        if linha is not None:
            despachar(tenant_id=linha[0])
    if linha is not None:
        logger.info("entrega reenviada", extra={"entrega_id": entrega_id})
    return linha is not None


def varrer() -> VarreduraDeEntregas:
    """One pass over what nobody else will fix; safe with any number of copies.

    The cluster's supervisor calls it on every sweep, next to
    `jobs.varredura.varrer()`, through `entrega.varrer()`, which first
    records the attempts whose sender died as failed ones.

    1. Subscriptions of jobs that already ended (a request subscribed while
       the job was finishing) get their email delivery; deterministic ids
       keep it to one per address and end.
    2. Deliveries waiting for a slot whose time has come (a retry's backoff
       elapsed, a dispatch lost with a crash) are dispatched, tenant by
       tenant, up to each one's free slots.
    3. Lost messages: deliveries in flight for more than
       RELATORIOS_REENFILEIRAR_APOS_S, not held by a sender, whose message is
       no longer waiting in the queue, get a new one (a duplicate is
       harmless: the claim is guarded).
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
    despachadas = sum(
        len(despachar(tenant_id=tenant_id)) for tenant_id in vagas.tenants_com_espera()
    )
    resultado = VarreduraDeEntregas(
        inscricoes_atendidas=len(atendidas),
        despachadas=despachadas,
        reenfileiradas=_reenfileirar_perdidas(),
    )
    if resultado.inscricoes_atendidas or resultado.reenfileiradas:
        logger.info("varredura de entregas", extra=vars(resultado))
    return resultado


def _reenfileirar_perdidas() -> int:
    limite = settings.RELATORIOS_REENFILEIRAR_APOS_S
    antes = Now() - timedelta(seconds=limite)
    candidatas = list(
        Entrega.objects.filter(estado="pendente", enfileirada_em__lt=antes)
        .filter(Q(em_curso_ate__isnull=True) | Q(em_curso_ate__lt=Now()))
        .values_list("id", flat=True)[:1000]
    )
    linhas = mensagens.reenfileirar_perdidas(
        tarefa=mensagens.TAREFA_ENTREGA,
        candidatas=candidatas,
        reservar="""
            UPDATE relatorio_entregas SET enfileirada_em = now()
             WHERE id = ANY(%s) AND estado = 'pendente'
               AND enfileirada_em < now() - make_interval(secs => %s)
            RETURNING id
        """,
        limite_s=limite,
        enfileirar_linhas=_enfileirar_perdidas,
    )
    return len(linhas)


def _enfileirar_perdidas(linhas: list[tuple[Any, ...]]) -> None:
    for (entrega_id,) in linhas:
        vagas.enfileirar(entrega_id)
        logger.warning(
            "mensagem perdida: entrega reenfileirada", extra={"entrega_id": entrega_id}
        )


def _exigir_transacao() -> None:
    # The outbox's promise (written with the change, or not at all) holds only
    # inside the transaction that makes the change.
    if not connection.in_atomic_block:
        raise RuntimeError("call inside the transaction of the change it reports")


def iso(instante: datetime) -> str:
    """An instant as the payloads write it: UTC, microseconds, Z."""
    return instante.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _md5(texto: str) -> str:
    return hashlib.md5(texto.lower().encode(), usedforsecurity=False).hexdigest()


def _sem_repeticao(emails: list[Any]) -> list[str]:
    vistos: dict[str, str] = {}
    for email in emails:
        if isinstance(email, str) and email.strip():
            vistos.setdefault(email.strip().lower(), email.strip())
    return list(vistos.values())
