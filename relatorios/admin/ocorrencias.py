"""Support staff's view of a schedule's occurrences and its absence alerts.

Both are read-only: an occurrence can be run again, an alert closed with a
note; each action calls `agendamentos.alertas` and is written to the admin log.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from relatorios.admin.agendamentos import alerta_de, situacao_do_alerta
from relatorios.admin.comum import (
    SomenteLeitura,
    Textos,
    aplicar,
    horario_do_tenant,
    link_do_job,
    quando,
    selecionados,
)
from relatorios.agendamentos import alertas
from relatorios.models import (
    Alerta,
    Ocorrencia,
)


class PodeReexecutar:
    """The occurrence's rerun is operating a schedule: `change_agendamento`."""

    def has_reexecutar_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("relatorios.change_agendamento"))


TEXTOS_REEXECUTAR = Textos(
    "reexecutar ocorrência", "Ocorrências reexecutadas", "ocorrência reexecutada"
)


@admin.register(Ocorrencia)
class OcorrenciaAdmin(SomenteLeitura, PodeReexecutar, admin.ModelAdmin):
    list_display = (
        "id",
        "agendamento",
        "tenant",
        "planejado_local",
        "estado",
        "job_link",
        "prazo_local",
        "conferida",
        "alerta_situacao",
    )
    list_filter = ("estado", "tenant")
    list_select_related = ("agendamento", "tenant", "alerta")
    ordering = ("-planejado_para",)
    show_facets = admin.ShowFacets.NEVER
    actions = ("reexecutar_ocorrencia",)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).defer("params")

    def lookup_allowed(self, lookup: str, value: str, request: Any = None) -> bool:
        # The schedule page links here filtered by schedule; listing every
        # schedule as a sidebar filter would not scale.
        if lookup == "agendamento__id__exact":
            return True
        return super().lookup_allowed(lookup, value, request)

    planejado_local = horario_do_tenant("planejado_para", "planejada para")
    prazo_local = horario_do_tenant("prazo_em", "prazo")

    @admin.display(description="job")
    def job_link(self, ocorrencia: Ocorrencia) -> str:
        return link_do_job(ocorrencia.job_id)

    @admin.display(description="alerta")
    def alerta_situacao(self, ocorrencia: Ocorrencia) -> str:
        alerta = alerta_de(ocorrencia)
        if alerta is None:
            return "—"
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:relatorios_alerta_change", args=[alerta.pk]),
            situacao_do_alerta(alerta),
        )

    @admin.action(
        description="Reexecutar ocorrência (job falho ou expirado, ou sem job)",
        permissions=["reexecutar"],
    )
    def reexecutar_ocorrencia(self, request: HttpRequest, queryset: QuerySet) -> None:
        if (lista := selecionados(self, request, queryset)) is not None:
            aplicar(
                self,
                request,
                lista,
                TEXTOS_REEXECUTAR,
                lambda o: alertas.executar_ocorrencia(ocorrencia_id=o.pk),
            )


class FiltroSituacaoDoAlerta(admin.SimpleListFilter):
    """Open alerts unless asked otherwise: what support comes here for."""

    title = "situação"
    parameter_name = "situacao"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("abertos", "abertos"), ("fechados", "fechados"), ("todos", "todos")]

    def value(self) -> str:
        return str(super().value() or "abertos")

    def choices(self, changelist: Any) -> Any:
        # No "Todos" entry of Django's: without the parameter the list is
        # the open alerts, and "todos" is an explicit choice.
        for valor, rotulo in self.lookup_choices:
            yield {
                "selected": self.value() == valor,
                "query_string": changelist.get_query_string(
                    {self.parameter_name: valor}
                ),
                "display": rotulo,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        if self.value() == "abertos":
            return queryset.filter(fechado_em__isnull=True)
        if self.value() == "fechados":
            return queryset.filter(fechado_em__isnull=False)
        return queryset


class NotaForm(forms.Form):
    nota = forms.CharField(
        label="Nota (o que foi feito; fica no alerta e no histórico)",
        max_length=1000,
        widget=forms.TextInput(attrs={"size": 80}),
    )


@admin.register(Alerta)
class AlertaAdmin(SomenteLeitura, PodeReexecutar, admin.ModelAdmin):
    list_display = (
        "id",
        "tenant",
        "agendamento",
        "planejado_local",
        "motivo",
        "aberto_em_",
        "fechado_em_",
        "fechado_por",
        "nota_resumida",
    )
    list_filter = (FiltroSituacaoDoAlerta, "tenant")
    list_select_related = ("tenant", "ocorrencia__agendamento", "fechado_por")
    ordering = ("-aberto_em",)
    show_facets = admin.ShowFacets.NEVER
    actions = ("fechar_com_nota", "reexecutar_ocorrencia")

    def lookup_allowed(self, lookup: str, value: str, request: Any = None) -> bool:
        # The dashboard's occurrences chart links a day here: its alerts by
        # the planned time (relatorio_ocorr_planejadas serves the range).
        if lookup in (
            "ocorrencia__planejado_para__gte",
            "ocorrencia__planejado_para__lt",
        ):
            return True
        return super().lookup_allowed(lookup, value, request)

    def has_fechar_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("relatorios.fechar_alerta"))

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).defer("ocorrencia__params")

    @admin.display(description="agendamento")
    def agendamento(self, alerta: Alerta) -> str:
        agendamento = alerta.ocorrencia.agendamento
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:relatorios_agendamento_change", args=[agendamento.pk]),
            agendamento,
        )

    aberto_em_ = horario_do_tenant("aberto_em", "aberto em")
    fechado_em_ = horario_do_tenant("fechado_em", "fechado em")

    @admin.display(description="planejada para")
    def planejado_local(self, alerta: Alerta) -> str:
        return quando(alerta.ocorrencia.planejado_para, alerta.tenant.fuso_horario)

    @admin.display(description="nota")
    def nota_resumida(self, alerta: Alerta) -> str:
        if len(alerta.nota) <= 60:
            return alerta.nota
        return format_html('<span title="{}">{}…</span>', alerta.nota, alerta.nota[:59])

    @admin.action(description="Fechar com nota (pede a nota)", permissions=["fechar"])
    def fechar_com_nota(
        self, request: HttpRequest, queryset: QuerySet
    ) -> TemplateResponse | None:
        lista = selecionados(self, request, queryset.select_related(None))
        if lista is None:
            return None
        form = NotaForm(request.POST if "confirmar" in request.POST else None)
        if form.is_valid():
            nota = form.cleaned_data["nota"]
            aplicar(
                self,
                request,
                lista,
                Textos("fechar", "Alertas fechados", "fechado"),
                lambda a: alertas.fechar(
                    alerta_id=a.pk, usuario_id=request.user.pk, nota=nota
                ),
                detalhe=f"nota: {nota}",
            )
            return None
        # First step (or an empty note): ask, as "marcar como falhou" does.
        return TemplateResponse(
            request,
            "admin/relatorios/alerta/fechar_com_nota.html",
            {
                **self.admin_site.each_context(request),
                "title": "Fechar alertas com uma nota",
                "opts": self.model._meta,
                "alertas": lista,
                "form": form,
                "acao": "fechar_com_nota",
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            },
        )

    @admin.action(
        description="Reexecutar a ocorrência do alerta", permissions=["reexecutar"]
    )
    def reexecutar_ocorrencia(self, request: HttpRequest, queryset: QuerySet) -> None:
        if (lista := selecionados(self, request, queryset)) is not None:
            aplicar(
                self,
                request,
                lista,
                TEXTOS_REEXECUTAR,
                lambda a: alertas.executar_ocorrencia(ocorrencia_id=a.ocorrencia_id),
            )
