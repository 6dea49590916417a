"""Support staff's view of tenants and their users."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import ValidationError
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest

from relatorios.admin.comum import quando
from relatorios.agendamentos import agenda
from relatorios.agendamentos.entrada import separar_por_virgula
from relatorios.models import IndicadorDeAntecipacao, Tenant, Usuario
from relatorios.notificacoes import enderecos

# More than a company has mail domains; the field is not a free text box.
DOMINIOS_MAX = 50


class TenantForm(forms.ModelForm):
    # A plain comma-separated text: the model field is a JSON list, and a
    # JSON text box would be one more place where JSON is parsed.
    dominios_email = forms.CharField(
        label="Domínios de e-mail permitidos",
        required=False,
        max_length=4000,
        help_text="Separados por vírgula (empresa.com.br, filial.com). Cada um "
        "vale também para os seus subdomínios. Vazio: qualquer domínio. Vale "
        "para os destinatários de agendamentos e para os avisos de relatório "
        "pronto; ao salvar, os destinatários de agendamentos fora da lista são "
        "removidos (a mensagem diz quais).",
        widget=forms.TextInput(attrs={"size": 80}),
    )

    class Meta:
        model = Tenant
        fields = ("nome", "fuso_horario", "dominios_email", "antecipar")
        labels = {"antecipar": "Antecipar relatórios"}
        help_texts = {
            "antecipar": "Calcular antes de serem pedidos os relatórios que a "
            "empresa pede num padrão (docs/operacao.md, «Computing ahead»)."
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["dominios_email"] = ", ".join(self.instance.dominios_email or [])

    def clean_dominios_email(self) -> list[str]:
        dominios: list[str] = []
        for texto in separar_por_virgula(self.cleaned_data["dominios_email"]):
            try:
                dominio = enderecos.normalizar_dominio(texto)
            except ValueError as erro:
                raise ValidationError(str(erro)) from None
            if dominio not in dominios:
                dominios.append(dominio)
        if len(dominios) > DOMINIOS_MAX:
            raise ValidationError(f"no máximo {DOMINIOS_MAX} domínios")
        return dominios


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    form = TenantForm
    list_display = (
        "id",
        "nome",
        "fuso_horario",
        "dominios",
        "antecipar",
        "precisao",
        "recall",
        "criado_em_",
    )
    list_filter = ("antecipar",)
    search_fields = ("nome",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        # Computing ahead's figures as its last pass wrote them (one row per
        # tenant): two subqueries of the page's rows, not a query per row.
        indicador = IndicadorDeAntecipacao.objects.filter(tenant_id=OuterRef("pk"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                assentados=Subquery(indicador.values("assentados")[:1]),
                aproveitados=Subquery(indicador.values("aproveitados")[:1]),
                pedidos=Subquery(indicador.values("pedidos")[:1]),
                imediatos=Subquery(indicador.values("imediatos")[:1]),
            )
        )

    @admin.display(description="precisão da antecipação")
    def precisao(self, tenant: Any) -> str:
        return _fracao(tenant.aproveitados, tenant.assentados)

    @admin.display(description="recall da antecipação")
    def recall(self, tenant: Any) -> str:
        return _fracao(tenant.imediatos, tenant.pedidos)

    @admin.display(description="criado em", ordering="criado_em")
    def criado_em_(self, tenant: Tenant) -> str:
        return quando(tenant.criado_em, tenant.fuso_horario)

    @admin.display(description="domínios de e-mail")
    def dominios(self, tenant: Tenant) -> str:
        return ", ".join(tenant.dominios_email or []) or "qualquer"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) or request.user.has_perm(
            "relatorios.definir_dominios_email"
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Support sets the allowed domains and the computing-ahead switch,
        # nothing else of a tenant.
        if request.user.has_perm("relatorios.change_tenant"):
            return ()
        return ("nome", "fuso_horario")

    def save_model(
        self, request: HttpRequest, obj: Tenant, form: Any, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        if "dominios_email" not in form.changed_data:
            return
        removidos = agenda.restringir_destinatarios(
            tenant_id=obj.pk, dominios=obj.dominios_email
        )
        if removidos:
            self.message_user(
                request,
                "Destinatários fora dos domínios permitidos, removidos dos "
                "agendamentos: "
                + "; ".join(
                    f"agendamento {pk}: {', '.join(emails)}"
                    for pk, emails in removidos.items()
                )
                + ".",
                messages.WARNING,
            )


def _fracao(parte: int | None, todo: int | None) -> str:
    if not todo:
        return "—"
    return f"{100 * (parte or 0) / todo:.0f}% ({parte} de {todo})"


class UsuarioForm(forms.ModelForm):
    def clean(self) -> dict[str, Any]:
        dados = super().clean() or {}
        email, tenant = dados.get("email"), dados.get("tenant")
        if email:
            # The address `notificar_email` sends to: the recipients' rule,
            # with the tenant's allowed domains.
            dominios = tenant.dominios_email if tenant is not None else []
            motivo = enderecos.motivo_da_recusa(email, dominios=dominios or [])
            if motivo is not None:
                self.add_error("email", motivo)
        if dados.get("tenant") and (dados.get("is_staff") or dados.get("is_superuser")):
            # The admin shows every tenant's data; the site refuses such users
            # anyway, this says why at the moment someone tries.
            raise ValidationError(
                "um usuário de tenant não pode ser da equipe nem superusuário"
            )
        return dados


@admin.register(Usuario)
class UsuarioAdmin(UserAdmin):
    form = UsuarioForm
    list_display = ("username", "tenant", "email", "is_staff", "is_active")
    list_filter = ("is_staff", "is_active", "groups", "tenant")
    list_select_related = ("tenant",)
    fieldsets = (*UserAdmin.fieldsets, ("Tenant", {"fields": ("tenant",)}))  # type: ignore[misc]
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Tenant", {"fields": ("tenant",)}))
