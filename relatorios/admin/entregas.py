"""Support staff's view of webhooks and the notification outbox.

Deliveries are read-only: the one change is the "reenviar" action, through
`saida.reenviar` (guarded, with a fresh queue message). A webhook's
secret is shown in full only once, to whoever created it (here or in the
tenant's API or page); afterwards not one character of it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from relatorios.admin.comum import LIMITE_EM_MASSA, SomenteLeitura, horario_do_tenant
from relatorios.models import Entrega, Webhook
from relatorios.notificacoes import canais, saida, webhooks
from relatorios.tipos.normalizacao import ErroDeParametro

# How much of a delivery's last error the list shows.
TRECHO_DO_ERRO = 80


class WebhookForm(forms.ModelForm):
    canal = forms.ChoiceField(
        choices=canais.escolhas_por_url, initial="webhook", required=False
    )
    # A plain field: the rule is webhooks.validar_url's (https, public, the
    # channel's hosts).
    url = forms.CharField(max_length=2000, widget=forms.URLInput(attrs={"size": 80}))
    eventos = forms.MultipleChoiceField(
        choices=webhooks.escolhas_de_eventos(),
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = Webhook
        # `url` is the declared field above (the model's URLField would build
        # a form field of its own, with Django's scheme rules).
        fields = ("tenant", "eventos", "ativo")

    def clean(self) -> dict[str, Any]:
        dados = super().clean() or {}
        if "url" not in self.fields or self.errors:
            return dados  # an existing endpoint: its URL and channel stay
        try:
            transporte = webhooks.validar_canal(dados.get("canal") or "webhook")
            dados["url"] = webhooks.validar_url(dados.get("url"), transporte)
        except ErroDeParametro as erro:
            self.add_error(
                erro.campo if erro.campo in self.fields else None, erro.mensagem
            )
        return dados


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    form = WebhookForm
    list_display = ("id", "tenant", "canal", "url_", "eventos_", "ativo", "criado_em_")
    list_filter = ("ativo", "canal", "tenant")
    list_select_related = ("tenant",)
    # Not the URL: a chat's is its credential, and no filter may test a guess.
    search_fields = ("tenant__nome",)
    readonly_fields = ("segredo_parcial", "criado_por", "criado_em_")

    criado_em_ = horario_do_tenant("criado_em", "criado em")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # A new URL is a new endpoint: it gets a new secret (a new webhook).
        # ("url" too, though never shown: read-only keeps it out of the form.)
        extras = ("tenant", "canal", "url", "url_") if obj is not None else ()
        return (*extras, *self.readonly_fields)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("tenant", "canal", "url", "eventos", "ativo")
        return ("tenant", "canal", "url_", "eventos", "ativo", *self.readonly_fields)

    @admin.display(description="URL")
    def url_(self, webhook: Webhook) -> str:
        return webhooks.url_visivel(webhook)

    @admin.display(description="eventos")
    def eventos_(self, webhook: Webhook) -> str:
        return ", ".join(webhooks.rotulo_do_evento(e) for e in webhook.eventos)

    @admin.display(description="segredo")
    def segredo_parcial(self, webhook: Webhook) -> str:
        if not webhook.segredo:
            return "—"
        # Not even a prefix: each character shown is one fewer to guess.
        return "definido (mostrado só na criação)"

    def save_model(
        self, request: HttpRequest, obj: Webhook, form: Any, change: bool
    ) -> None:
        if change:
            obj.save(update_fields=["eventos", "ativo"])
            return
        criado = webhooks.registrar_webhook(
            tenant_id=obj.tenant_id,
            canal=form.cleaned_data["canal"] or "webhook",
            url=form.cleaned_data["url"],
            eventos=obj.eventos,
            usuario_id=request.user.pk,
        )
        if not obj.ativo:
            Webhook.objects.filter(pk=criado.pk).update(ativo=False)
        obj.pk = criado.pk
        if not criado.segredo:
            return  # a chat: nothing to sign, nothing to hand over
        self.message_user(
            request,
            format_html(
                "Segredo do webhook (mostrado só agora; passe-o ao cliente): "
                "<code>{}</code>",
                criado.segredo,
            ),
            messages.WARNING,
        )


@admin.register(Entrega)
class EntregaAdmin(SomenteLeitura, admin.ModelAdmin):
    list_display = (
        "id",
        "evento_",
        "canal",
        "destino",
        "estado",
        "tentativas",
        "ultimo_status",
        "erro_resumido",
        "proxima_em_",
        "criado_em_",
    )
    list_filter = ("estado", "canal", "evento")
    list_select_related = ("webhook", "tenant")
    search_fields = ("=mensagem_id", "=job__id", "=alerta__id", "=ocorrencia__id")
    ordering = ("-criado_em",)
    show_facets = admin.ShowFacets.NEVER
    actions = ("reenviar",)

    proxima_em_ = horario_do_tenant("proxima_em", "próxima tentativa")
    criado_em_ = horario_do_tenant("criado_em", "criada em")

    def has_reenviar_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("relatorios.reenviar_entrega"))

    @admin.display(description="evento", ordering="evento")
    def evento_(self, entrega: Entrega) -> str:
        return format_html(
            '<span title="{}">{}</span>',
            entrega.evento,
            webhooks.rotulo_do_evento(entrega.evento),
        )

    @admin.display(description="destino")
    def destino(self, entrega: Entrega) -> str:
        if entrega.webhook is not None:
            return webhooks.url_visivel(entrega.webhook)
        if entrega.destinatarios:
            return ", ".join(entrega.destinatarios)
        return "(webhook removido)"

    @admin.display(description="último erro")
    def erro_resumido(self, entrega: Entrega) -> str:
        erro = entrega.ultimo_erro
        if len(erro) <= TRECHO_DO_ERRO:
            return erro
        return format_html(
            '<span title="{}">{}</span>', erro, erro[: TRECHO_DO_ERRO - 1] + "…"
        )

    @admin.action(description="Reenviar agora", permissions=["reenviar"])
    def reenviar(self, request: HttpRequest, queryset: QuerySet) -> None:
        ids = list(
            queryset.order_by("pk").values_list("pk", flat=True)[:LIMITE_EM_MASSA]
        )
        feitas = [i for i in ids if saida.reenviar(entrega_id=i)]
        for entrega in Entrega.objects.filter(pk__in=feitas):
            self.log_change(request, entrega, "reenviada pelo suporte")
        if feitas:
            self.message_user(
                request, f"{len(feitas)} entrega(s) reenviada(s).", messages.SUCCESS
            )
        if len(feitas) < len(ids):
            self.message_user(
                request,
                f"{len(ids) - len(feitas)} não reenviada(s): já entregues ou em envio.",
                messages.WARNING,
            )
