"""Webhooks: the tenant's endpoints for events, its own or a chat's."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers

from relatorios.api.esquema.comum import (
    COMUNS,
    E400,
    E404,
    E413,
    cabecalhos,
    limite_do_tenant,
    location,
)
from relatorios.notificacoes import canais
from relatorios.notificacoes.webhooks import EVENTOS, URL_MAX

# What a webhook subscribes to (agendamento.entregue goes to the webhooks a
# schedule names).
_EVENTOS = [(e, e) for e in EVENTOS]


# The channels a tenant registers by URL, from the registry.
_CANAIS = canais.escolhas_por_url()
_HOSTS = "; ".join(
    f"`{t.canal}`: {', '.join(h.lstrip('.') for h in t.hosts)}"
    for t in canais.por_url()
    if t.hosts
)


class NovoWebhookSerializer(serializers.Serializer):
    canal = serializers.ChoiceField(
        _CANAIS,
        required=False,
        default="webhook",
        help_text="`webhook` (padrão): um POST assinado (Standard Webhooks) com "
        "o evento em JSON. Os outros são o webhook de entrada de um chat, que "
        "recebe uma mensagem do evento (nunca o arquivo), e só aceitam os "
        f"hosts do serviço ({_HOSTS}).",
    )
    url = serializers.URLField(
        max_length=URL_MAX,
        help_text="`https://` para um endereço público (regra contra SSRF).",
    )
    # One to one of each (notificacoes.validar_eventos).
    eventos = serializers.ListField(
        child=serializers.ChoiceField(_EVENTOS),
        min_length=1,
        max_length=len(EVENTOS),
    )


class WebhookSerializer(serializers.Serializer):
    # A webhook as listed: never its secret.

    id = serializers.IntegerField()
    canal = serializers.ChoiceField(_CANAIS)
    url = serializers.CharField(
        help_text="A de um chat é a sua credencial: só o host e o final."
    )
    eventos = serializers.ListField(child=serializers.ChoiceField(_EVENTOS))
    ativo = serializers.BooleanField()
    criado_em = serializers.DateTimeField()


class WebhookCriadoSerializer(WebhookSerializer):
    segredo = serializers.CharField(
        allow_blank=True,
        help_text="`whsec_...`: mostrado só nesta resposta; assina as entregas "
        "(vazio num chat: não há assinatura).",
    )


listar_webhooks = extend_schema(
    operation_id="listar_webhooks",
    tags=["webhooks"],
    summary="Os webhooks do tenant (sem o segredo)",
    parameters=cabecalhos(),
    responses={200: WebhookSerializer(many=True), **COMUNS},
)
criar_webhook = extend_schema(
    operation_id="criar_webhook",
    tags=["webhooks"],
    summary="Registra um webhook; o segredo aparece só aqui",
    request=NovoWebhookSerializer,
    parameters=cabecalhos(location(201, descricao="`/relatorios/webhooks/<id>`.")),
    examples=[
        OpenApiExample(
            "pronto e falhou",
            {
                "url": "https://erp.example.com/ganchos",
                "eventos": ["job.pronto", "job.falhou"],
            },
            request_only=True,
        )
    ],
    responses={
        201: WebhookCriadoSerializer,
        400: E400,
        409: limite_do_tenant(
            "RELATORIOS_MAX_WEBHOOKS_POR_TENANT",
            "o limite de 10 webhooks por empresa foi atingido: remova um antes "
            "de registrar outro",
        ),
        413: E413,
        **COMUNS,
    },
)
ver_webhook = extend_schema(
    operation_id="ver_webhook",
    tags=["webhooks"],
    summary="Um webhook (sem o segredo)",
    parameters=cabecalhos(),
    responses={200: WebhookSerializer, 404: E404, **COMUNS},
)
excluir_webhook = extend_schema(
    operation_id="excluir_webhook",
    tags=["webhooks"],
    summary="Remove um webhook",
    parameters=cabecalhos(),
    responses={204: None, 404: E404, **COMUNS},
)
