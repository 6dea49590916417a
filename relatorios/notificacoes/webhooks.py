"""A tenant's endpoints: its own webhooks and its chats' incoming webhooks.

Registration checks the URL against its channel (`canais`: https, the
service's documented hosts for a chat, public addresses for all) and makes
a signing secret for the channels that sign.
"""

from __future__ import annotations

import base64
import logging
import secrets
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.http import Http404
from django.shortcuts import get_object_or_404

from relatorios.banco.comum import ID_MAXIMO
from relatorios.models import Evento, Webhook, reservar_vaga
from relatorios.models.notificacoes import url_mascarada
from relatorios.notificacoes import canais
from relatorios.notificacoes.destinos import DestinoRecusado, destino
from relatorios.tipos.normalizacao import ErroDeParametro

logger = logging.getLogger(__name__)


# What a webhook subscribes to. `agendamento.entregue` goes to the webhooks a
# schedule names (Agendamento.webhooks), `alertas.resumo` is email only.
EVENTOS = (
    Evento.JOB_PRONTO.value,
    Evento.JOB_FALHOU.value,
    Evento.ALERTA_ABERTO.value,
    Evento.ALERTA_FECHADO.value,
)


def rotulo_do_evento(codigo: str) -> str:
    """An event by its label ("relatório pronto"); an unknown code as is."""
    return str(Evento(codigo).label) if codigo in Evento.values else codigo


def escolhas_de_eventos() -> list[tuple[str, str]]:
    """The events a webhook may follow, for a form: the label and the code
    (the code is what the endpoint receives)."""
    return [(e, f"{rotulo_do_evento(e)} ({e})") for e in EVENTOS]


# The texts a tenant stores in a webhook, and their limits (docs/api.md).
URL_MAX = 2000


def registrar_webhook(
    *,
    tenant_id: int,
    url: Any,
    eventos: Any,
    usuario_id: int | None,
    canal: Any = "webhook",
) -> Webhook:
    """Create a tenant's endpoint; a signing one with a new secret, returned
    once in `segredo`.

    ErroDeParametro names `canal`, `url` or `eventos` when they are invalid;
    the URL must pass its channel's host rule and the same address rule as
    each delivery. A tenant that already has RELATORIOS_MAX_WEBHOOKS_POR_TENANT
    endpoints (every finished job is one POST to each) gets LimiteDoTenant,
    counted under a lock on its row.
    """
    transporte = validar_canal(canal)
    url_valida = validar_url(url, transporte)
    eventos_validos = validar_eventos(eventos)
    limite = settings.RELATORIOS_MAX_WEBHOOKS_POR_TENANT
    # After the URL's check: its DNS look-up is not made under the lock.
    with transaction.atomic():
        reservar_vaga(
            tenant_id=tenant_id,
            existentes=Webhook.objects.filter(tenant_id=tenant_id),
            limite=limite,
            mensagem=f"o limite de {limite} webhooks por empresa foi atingido: "
            "remova um antes de registrar outro",
        )
        webhook = Webhook.objects.create(
            tenant_id=tenant_id,
            canal=transporte.canal,
            url=url_valida,
            eventos=eventos_validos,
            segredo=novo_segredo() if transporte.assinado else "",
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


def validar_canal(canal: Any) -> canais.Transporte:
    nomes = [t.canal for t in canais.por_url()]
    if not isinstance(canal, str) or canal not in nomes:
        raise ErroDeParametro("canal", f"deve ser um de: {', '.join(nomes)}")
    return canais.obter(canal)


def validar_url(url: Any, transporte: canais.Transporte | None = None) -> str:
    if not isinstance(url, str) or not url.strip():
        raise ErroDeParametro("url", "informe a URL do webhook")
    url = url.strip()
    if len(url) > URL_MAX:
        raise ErroDeParametro("url", f"URL longa demais (máximo {URL_MAX} caracteres)")
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise ErroDeParametro("url", "URL inválida") from None
    host = urlsplit(url).hostname or ""
    # Development and tests talk to throwaway receivers on loopback.
    if (
        transporte is not None
        and not transporte.host_permitido(host)
        and not settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL
    ):
        raise ErroDeParametro(
            "url",
            f"uma URL de {transporte.titulo} é de "
            + ", ".join(h.lstrip(".") for h in transporte.hosts),
        )
    try:
        destino(url)
    except DestinoRecusado as recusa:
        raise ErroDeParametro("url", str(recusa)) from None
    return url


def url_visivel(webhook: Webhook) -> str:
    """The URL as pages, the API and the admin show it: a chat's incoming
    webhook URL is its credential, so only its host and last characters."""
    try:
        secreta = canais.obter(webhook.canal).url_secreta
    except canais.CanalDesconhecido:
        secreta = True
    if not secreta:
        return webhook.url
    return url_mascarada(webhook.url)


def validar_eventos(eventos: Any) -> list[str]:
    # At most one of each: a longer list can only repeat one.
    if not isinstance(eventos, list) or not 0 < len(eventos) <= len(EVENTOS):
        raise ErroDeParametro(
            "eventos", f"informe uma lista com um ou mais de: {', '.join(EVENTOS)}"
        )
    desconhecidos = [e for e in eventos if e not in EVENTOS]
    if desconhecidos:
        raise ErroDeParametro(
            "eventos",
            f"evento desconhecido: {str(desconhecidos[0])[:40]}; "
            f"use {', '.join(EVENTOS)}",
        )
    return sorted(set(eventos))


def webhook_do_tenant(*, tenant_id: int, webhook_id: int) -> Webhook:
    """The one tenant-scoped read: another tenant's webhook is a 404, never a 403."""
    if webhook_id > ID_MAXIMO:
        raise Http404
    return get_object_or_404(Webhook, pk=webhook_id, tenant_id=tenant_id)
