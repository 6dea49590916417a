"""Email: the event's message in pt-BR, a scheduled report's .xlsx attached."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives

from relatorios.models import EstadoDoJob, Evento, RelatorioJob
from relatorios.notificacoes import arquivos, enderecos
from relatorios.notificacoes.canais.base import (
    Envio,
    ResultadoDoEnvio,
    Transporte,
    trecho,
)
from relatorios.notificacoes.email import email_do_evento
from relatorios.notificacoes.saida import iso


class Email(Transporte):
    canal = "email"
    titulo = "E-mail"
    por_url = False

    def enviar(self, envio: Envio) -> ResultadoDoEnvio:
        if not envio.destinatarios:
            return ResultadoDoEnvio(ok=False, erro="sem destinatários")
        suporte = {e.lower() for e in settings.RELATORIOS_EMAILS_SUPORTE}
        for endereco in envio.destinatarios:
            # Stored before today's rules, or before the tenant's allowed
            # domains changed: checked again (support's own addresses aside).
            motivo = None
            if endereco.lower() not in suporte:
                motivo = enderecos.recusa_no_envio(
                    tenant_id=envio.tenant_id, endereco=endereco
                )
            if motivo is not None:
                return ResultadoDoEnvio(
                    ok=False, erro=f"destinatário recusado: {motivo}", definitivo=True
                )
        try:
            anexo = _anexo(envio.payload)
        except arquivos.Ocupado as ocupado:
            # A download is building this very file: the next attempt attaches it.
            return ResultadoDoEnvio(ok=False, erro=f"anexo: {ocupado}")
        try:
            email = email_do_evento(
                envio.payload, anexo=anexo.nome if anexo is not None else ""
            )
            mensagem = EmailMultiAlternatives(
                email.assunto,
                email.texto,
                settings.DEFAULT_FROM_EMAIL,
                to=envio.destinatarios,
                headers={"Message-ID": message_id(envio.mensagem_id)},
            )
            if email.html is not None:
                mensagem.attach_alternative(email.html, "text/html")
            if anexo is not None:
                conteudo = arquivos.conteudo(anexo)
                mensagem.attach(anexo.nome, conteudo, anexo.tipo_de_conteudo)
            mensagem.send(fail_silently=False)
        except Exception as exc:  # SMTP and socket errors: no traceback kept
            return ResultadoDoEnvio(
                ok=False, erro=trecho(f"{type(exc).__name__}: {exc}")
            )
        return ResultadoDoEnvio(ok=True)


def message_id(mensagem_id: str) -> str:
    """The delivery's `Message-ID`, the same on every attempt: an attempt
    that the SMTP server accepted but that could not be recorded (a worker
    killed, a connection dropped) sends again, and the copy carries the id
    of the first, so a mail client (and the soak) can drop it, as a webhook
    receiver does with `webhook-id`. The domain is the sender's, as RFC 5322
    suggests; `mensagem_id` is unique per event and recipient."""
    dominio = (
        settings.DEFAULT_FROM_EMAIL.rpartition("@")[2].strip("<> ") or "relatorios"
    )
    return f"<{mensagem_id}@{dominio}>"


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
        RelatorioJob.objects.filter(pk=dados["job"]["id"], status=EstadoDoJob.PRONTO)
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
