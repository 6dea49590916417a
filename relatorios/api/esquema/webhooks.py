"""Webhooks: the tenant's subscriptions to job events."""

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
from relatorios.notificacoes.webhooks import EVENTOS, URL_MAX

# What a webhook subscribes to (agendamento.entregue goes to the webhooks a
# schedule names).
_EVENTOS = [(e, e) for e in EVENTOS]


class NovoWebhookSerializer(serializers.Serializer):
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
    url = serializers.CharField()
    eventos = serializers.ListField(child=serializers.ChoiceField(_EVENTOS))
    ativo = serializers.BooleanField()
    criado_em = serializers.DateTimeField()


class WebhookCriadoSerializer(WebhookSerializer):
    segredo = serializers.CharField(
        help_text="`whsec_...`: mostrado só nesta resposta; assina as entregas."
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
