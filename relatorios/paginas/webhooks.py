"""/painel/webhooks/: a tenant's managers list, register and remove webhooks.

Thin like the other pages: `notificacoes` validates and writes; every read is
scoped to the user's tenant (another tenant's webhook is a 404).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from relatorios.models import LimiteDoTenant, Webhook
from relatorios.notificacoes import canais
from relatorios.notificacoes.webhooks import (
    EVENTOS,
    URL_MAX,
    escolhas_de_eventos,
    registrar_webhook,
    remover_webhook,
    rotulo_do_evento,
    url_visivel,
    webhook_do_tenant,
)
from relatorios.paginas.comum import gerente, tenant_id_do_pedido
from relatorios.tipos.normalizacao import ErroDeParametro


class WebhookForm(forms.Form):
    canal = forms.ChoiceField(
        label="Para onde",
        choices=canais.escolhas_por_url,
        initial="webhook",
        required=False,  # absent: a webhook, as before there were chats
        help_text="Um webhook seu recebe o evento em JSON, assinado; um chat "
        "(Slack, Teams, Google Chat) recebe uma mensagem no canal do webhook "
        "de entrada dele.",
    )
    url = forms.CharField(
        label="URL",
        max_length=URL_MAX,
        widget=forms.URLInput(attrs={"placeholder": "https://", "size": 60}),
    )
    eventos = forms.MultipleChoiceField(
        label="Eventos",
        choices=escolhas_de_eventos(),
        initial=list(EVENTOS),
        widget=forms.CheckboxSelectMultiple,
    )


@require_http_methods(["GET", "POST"])
@gerente
def webhooks(request: HttpRequest) -> HttpResponse:
    """GET: the list and the form. POST: register; the answer shows the secret
    once (it is never shown again)."""
    if request.method != "POST":
        return _pagina(request, WebhookForm())
    form = WebhookForm(request.POST)
    if not form.is_valid():
        return _pagina(request, form, status=400)
    try:
        criado = registrar_webhook(
            tenant_id=tenant_id_do_pedido(request),
            canal=form.cleaned_data["canal"] or "webhook",
            url=form.cleaned_data["url"],
            eventos=form.cleaned_data["eventos"],
            usuario_id=request.user.pk,
        )
    except ErroDeParametro as erro:
        form.add_error(erro.campo if erro.campo in form.fields else None, erro.mensagem)
        return _pagina(request, form, status=400)
    except LimiteDoTenant as limite:
        form.add_error(None, str(limite))
        return _pagina(request, form, status=409)
    return _pagina(request, WebhookForm(), criado=criado)


@require_POST
@gerente
def remover(request: HttpRequest, webhook_id: int) -> HttpResponse:
    tenant_id = tenant_id_do_pedido(request)
    webhook = webhook_do_tenant(tenant_id=tenant_id, webhook_id=webhook_id)
    if remover_webhook(tenant_id=tenant_id, webhook_id=webhook.pk):
        messages.success(request, f"Webhook {url_visivel(webhook)} removido.")
    return redirect("webhooks_do_painel")


def _pagina(
    request: HttpRequest,
    form: WebhookForm,
    *,
    criado: Webhook | None = None,
    status: int = 200,
) -> HttpResponse:
    contexto: dict[str, Any] = {
        "form": form,
        "webhooks": [
            {
                "id": w.pk,
                "canal": canais.obter(w.canal).titulo,
                "url": url_visivel(w),
                "eventos": [rotulo_do_evento(e) for e in w.eventos],
                "ativo": w.ativo,
                "criado_em": w.criado_em,
            }
            for w in Webhook.objects.filter(tenant_id=tenant_id_do_pedido(request))
        ],
        "criado": criado,
    }
    return render(request, "relatorios/webhooks.html", contexto, status=status)
