"""The webhooks API: a tenant's endpoints for events (thin over `notificacoes`)."""

from __future__ import annotations

from django.http import Http404
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from relatorios.api import esquema
from relatorios.api.permissoes import tenant_do_pedido
from relatorios.models import Webhook
from relatorios.notificacoes import webhooks
from relatorios.tipos.normalizacao import objeto_com

CAMPOS_DE_ENTRADA = ("canal", "url", "eventos")


class WebhookSerializer(serializers.ModelSerializer):
    """An endpoint as listed: never its secret, nor a chat's whole URL."""

    url = serializers.SerializerMethodField()

    class Meta:
        model = Webhook
        fields: tuple[str, ...] = (
            "id",
            "canal",
            "url",
            "eventos",
            "ativo",
            "criado_em",
        )

    def get_url(self, webhook: Webhook) -> str:
        return webhooks.url_visivel(webhook)


class WebhookCriadoSerializer(WebhookSerializer):
    """The creation's answer: the only time the secret is shown."""

    class Meta(WebhookSerializer.Meta):
        fields = (*WebhookSerializer.Meta.fields, "segredo")


class Webhooks(APIView):
    """GET /relatorios/webhooks: the tenant's webhooks; POST: register one."""

    @esquema.listar_webhooks
    def get(self, request: Request) -> Response:
        webhooks = Webhook.objects.filter(tenant_id=tenant_do_pedido(request))
        return Response(WebhookSerializer(webhooks, many=True).data)

    @esquema.criar_webhook
    def post(self, request: Request) -> Response:
        dados = objeto_com(request.data, CAMPOS_DE_ENTRADA)
        webhook = webhooks.registrar_webhook(
            tenant_id=tenant_do_pedido(request),
            canal=dados.get("canal", "webhook"),
            url=dados.get("url"),
            eventos=dados.get("eventos"),
            usuario_id=request.user.pk,
        )
        return Response(
            WebhookCriadoSerializer(webhook).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/relatorios/webhooks/{webhook.pk}"},
        )


class WebhookDoTenant(APIView):
    """GET/DELETE /relatorios/webhooks/<id>; another tenant's is a 404."""

    @esquema.ver_webhook
    def get(self, request: Request, webhook_id: int) -> Response:
        webhook = webhooks.webhook_do_tenant(
            tenant_id=tenant_do_pedido(request), webhook_id=webhook_id
        )
        return Response(WebhookSerializer(webhook).data)

    @esquema.excluir_webhook
    def delete(self, request: Request, webhook_id: int) -> Response:
        tenant_id = tenant_do_pedido(request)
        webhook = webhooks.webhook_do_tenant(tenant_id=tenant_id, webhook_id=webhook_id)
        if not webhooks.remover_webhook(tenant_id=tenant_id, webhook_id=webhook.pk):
            raise Http404  # removed by a concurrent request
        return Response(status=status.HTTP_204_NO_CONTENT)
