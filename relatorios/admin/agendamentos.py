"""Support staff's view of schedules, their occurrences and absence alerts.

As with jobs, no row here is written by a ModelForm: a schedule is created by
`agenda.criar` (the same validation as the API and the pages, its error
shown at its field), and pausing, resuming, "executar agora" and the soft
delete are `agenda`'s and `disparo`'s guarded updates. A schedule's fields never change
after creation (changing the cron is delete and create), occurrences and
alerts are read-only, and every action is written to the admin log.

Times are shown on the tenant's wall clock, where its crons are evaluated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from relatorios.admin.comum import (
    FiltroTipo,
    Textos,
    aplicar,
    horario_do_tenant,
    link_do_job,
    local,
    selecionados,
    tipo_legivel,
)
from relatorios.agendamentos import aberturas, agenda, disparo
from relatorios.agendamentos.entrada import AgendamentoForm
from relatorios.jobs.suporte import Acao
from relatorios.models import (
    Agendamento,
    Alerta,
    EstadoOcorrencia,
    FormaDeEntrega,
    LimiteDoTenant,
    Ocorrencia,
    Tenant,
    relogio,
)

# Occurrences listed on a schedule's page (the full list is one link away).
OCORRENCIAS_NA_PAGINA = 20


def prazo_em_minutos(prazo: timedelta) -> str:
    minutos = int(prazo.total_seconds()) // 60
    if minutos % 60:
        return f"{minutos} min"
    return f"{minutos // 60} h"


def situacao_do_alerta(alerta: Alerta | None) -> str:
    if alerta is None:
        return "—"
    return "aberto" if alerta.aberto else "fechado"


def alerta_de(ocorrencia: Ocorrencia) -> Alerta | None:
    # The reverse one-to-one raises when there is no alert.
    try:
        return ocorrencia.alerta
    except Alerta.DoesNotExist:
        return None


class AgendamentoAdminForm(AgendamentoForm):
    """The add form: the managers' form (`agendamentos.entrada`) plus the
    tenant, with stores typed as codes. `clean` calls `agenda.criar`, which
    validates and inserts in one step, so an ErroDeParametro is still shown
    at its field; `save` only hands back the row the service created. A
    preview (`_previsualizar`) is never valid: the add view renders the
    form again, with the next firings on the chosen tenant's clock."""

    tenant = forms.ModelChoiceField(Tenant.objects.order_by("nome"), label="Tenant")

    # Set per request by AgendamentoAdmin.get_form (who created it).
    usuario_id: int | None = None

    class Media:
        css = {"all": ("relatorios/agendamento.css",)}
        js = ("relatorios/agendamento.js",)

    def __init__(
        self, *args: Any, instance: Agendamento | None = None, **kwargs: Any
    ) -> None:
        # The admin's add view passes `instance` (None) and reads it back.
        super().__init__(*args, lojas=None, **kwargs)
        self.instance = instance or Agendamento()
        self.criado: Agendamento | None = None

    def fuso_da_previa(self) -> str | None:
        tenant = self.cleaned_data.get("tenant")
        return tenant.fuso_horario if tenant else None

    def clean(self) -> dict[str, Any]:
        dados = super().clean()
        if self.errors or self.previsualizando:
            return dados
        try:
            self.criado = self.criar(
                tenant_id=dados["tenant"].pk, usuario_id=self.usuario_id
            )
        except LimiteDoTenant as limite:
            self.add_error(None, str(limite))
        return dados

    def save(self, commit: bool = True) -> Agendamento:
        assert self.criado is not None  # only a valid form is saved
        return self.criado

    def save_m2m(self) -> None:
        """Nothing: the service wrote the row and all of it."""


@dataclass(frozen=True)
class AcaoDoAgendamento:
    servico: Callable[..., bool]
    textos: Textos
    sem_efeito: str


ACOES_DO_AGENDAMENTO = {
    "pausar": AcaoDoAgendamento(
        agenda.pausar,
        Textos("pausar", "Agendamentos pausados", "pausado"),
        "já estava pausado ou excluído",
    ),
    "retomar": AcaoDoAgendamento(
        agenda.retomar,
        Textos("retomar", "Agendamentos retomados", "retomado"),
        "já estava ativo, ou foi excluído",
    ),
    "excluir": AcaoDoAgendamento(
        agenda.excluir,
        Textos("excluir", "Agendamentos excluídos", "excluído"),
        "já estava excluído",
    ),
}


@admin.register(Agendamento)
class AgendamentoAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "tenant",
        "nome",
        tipo_legivel,
        "periodo",
        "quando",
        "prazo_curto",
        "situacao",
        "proximo_disparo_local",
        "ultima_ocorrencia",
        "leitura",
    )
    list_display_links = ("id", "nome")
    list_filter = ("ativo", FiltroTipo, "tenant")
    list_select_related = ("tenant",)
    search_fields = ("nome", "tenant__nome")
    search_help_text = "parte do nome do agendamento ou do tenant"
    show_facets = admin.ShowFacets.NEVER
    actions = ("pausar", "retomar", "excluir")
    change_form_template = "admin/relatorios/agendamento/change_form.html"
    campos_da_pagina = (
        ("id", "situacao"),
        ("tenant", "nome"),
        ("tipo", "periodo", "agrupar"),
        "quando",
        ("cron", "prazo_curto", "recuperacao"),
        "lojas_",
        ("destinatarios_", "entrega", "pular"),
        "leitura",
        ("proximos_disparos", "criado_por"),
        ("criado_em_", "pausado_em_", "excluido_em_"),
    )

    # --- permissions: schedules are created and acted on, never edited or deleted
    # by hand (excluir is the soft delete of the service) ---------------------------

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        ultima = Ocorrencia.objects.filter(agendamento=OuterRef("pk")).order_by(
            "-planejado_para"
        )
        return (
            super()
            .get_queryset(request)
            .annotate(ultimo_estado=Subquery(ultima.values("estado")[:1]))
        )

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        # The page's schedules' reading in one statement, not one per row.
        lista = super().get_changelist_instance(request)
        leituras = aberturas.leituras([a.pk for a in lista.result_list])
        for agendamento in lista.result_list:
            agendamento.leitura_das_entregas = leituras.get(agendamento.pk)
        return lista

    # --- columns -----------------------------------------------------------------

    @admin.display(description=f"aberturas (últimas {aberturas.ULTIMAS} entregas)")
    def leitura(self, agendamento: Agendamento) -> str:
        if hasattr(agendamento, "leitura_das_entregas"):
            leitura = agendamento.leitura_das_entregas
        else:  # the change view: one schedule
            leitura = aberturas.leituras([agendamento.pk]).get(agendamento.pk)
        return texto_da_leitura(leitura, agendamento)

    @admin.display(description="quando")
    def quando(self, agendamento: Agendamento) -> str:
        return format_html(
            "{}<br><small>cron <code>{}</code></small>",
            agendamento.descricao,
            agendamento.cron,
        )

    @admin.display(description="lojas")
    def lojas_(self, agendamento: Agendamento) -> str:
        return ", ".join(agendamento.lojas or []) or "todas"

    @admin.display(description="destinatários")
    def destinatarios_(self, agendamento: Agendamento) -> str:
        return ", ".join(agendamento.destinatarios or []) or "—"

    @admin.display(description="prazo", ordering="prazo")
    def prazo_curto(self, agendamento: Agendamento) -> str:
        return prazo_em_minutos(agendamento.prazo)

    @admin.display(description="situação", ordering="ativo")
    def situacao(self, agendamento: Agendamento) -> str:
        if agendamento.excluido_em is not None:
            return "excluído"
        return "ativo" if agendamento.ativo else "pausado"

    proximo_disparo_local = horario_do_tenant("proximo_disparo", "próximo disparo")
    criado_em_ = horario_do_tenant("criado_em", "criado em")
    pausado_em_ = horario_do_tenant("pausado_em", "pausado em")
    excluido_em_ = horario_do_tenant("excluido_em", "excluído em")

    @admin.display(description="última ocorrência")
    def ultima_ocorrencia(self, agendamento: Agendamento) -> str:
        estado = getattr(agendamento, "ultimo_estado", None)
        return str(EstadoOcorrencia(estado).label) if estado else "—"

    @admin.display(description="próximos disparos")
    def proximos_disparos(self, agendamento: Agendamento) -> str:
        fuso = agendamento.tenant.fuso_horario
        disparos = agenda.proximos_disparos(agendamento, 3)
        if not disparos:
            return "— (pausado)"
        return (
            f"{', '.join(local(d, fuso) for d in disparos)} "
            f"({relogio.nome_do_fuso(fuso)})"
        )

    @admin.display(description="últimas ocorrências")
    def ultimas_ocorrencias(self, agendamento: Agendamento) -> str:
        fuso = agendamento.tenant.fuso_horario
        ocorrencias = list(
            Ocorrencia.objects.filter(agendamento=agendamento)
            .select_related("alerta")
            .defer("params")
            .order_by("-planejado_para")[:OCORRENCIAS_NA_PAGINA]
        )
        if not ocorrencias:
            return "Nenhuma ainda."
        linhas = format_html_join(
            "",
            "<tr><td><a href='{}'>{}</a></td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td></tr>",
            (
                (
                    reverse("admin:relatorios_ocorrencia_change", args=[o.pk]),
                    local(o.planejado_para, fuso),
                    o.get_estado_display(),
                    o.motivo or "—",
                    link_do_job(o.job_id),
                    local(o.prazo_em, fuso),
                    situacao_do_alerta(alerta_de(o)),
                )
                for o in ocorrencias
            ),
        )
        return format_html(
            "<table><thead><tr><th>planejada ({})</th><th>estado</th><th>motivo</th>"
            "<th>job</th><th>prazo</th><th>alerta</th></tr></thead><tbody>{}</tbody>"
            "</table><p><a href='{}?agendamento__id__exact={}'>Todas as "
            "ocorrências deste agendamento</a></p>",
            relogio.nome_do_fuso(fuso),
            linhas,
            reverse("admin:relatorios_ocorrencia_changelist"),
            agendamento.pk,
        )

    # --- add (through the service) and change (read-only, with buttons) -------------

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            return type(
                "AgendamentoAdminForm",
                (AgendamentoAdminForm,),
                {"usuario_id": request.user.pk},
            )
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            # The tenant first: the preview's clock is its zone.
            campos = [c for c in AgendamentoAdminForm.base_fields if c != "tenant"]
            return [(None, {"fields": ["tenant", *campos]})]
        return [
            (None, {"fields": self.campos_da_pagina}),
            ("Ocorrências", {"fields": ("ultimas_ocorrencias",)}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ()
        campos: list[str] = []
        for linha in self.campos_da_pagina:
            campos.extend([linha] if isinstance(linha, str) else linha)
        return [*campos, "ultimas_ocorrencias"]

    def save_model(
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        # Added: agenda.criar already inserted it (AgendamentoAdminForm.clean).
        # Changed: never (change_view refuses POST).
        if change:
            raise PermissionDenied

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method == "POST":
            # A ModelForm save would write every column back, racing the
            # firing loop's guarded updates; changes are the actions only.
            raise PermissionDenied
        contexto = {
            **(extra_context or {}),
            "show_save": False,
            "show_save_and_continue": False,
            "show_save_and_add_another": False,
            "show_delete": False,
        }
        agendamento = self.get_object(request, object_id)
        if agendamento is not None and self.has_change_permission(request, agendamento):
            contexto["acoes_do_agendamento"] = acoes_possiveis(agendamento)
        return super().change_view(request, object_id, form_url, contexto)

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "previa/",
                self.admin_site.admin_view(require_POST(self.previa)),
                name="relatorios_agendamento_previa",
            ),
            path(
                "<int:agendamento_id>/acoes/<slug:acao>/",
                self.admin_site.admin_view(require_POST(self.acao_no_agendamento)),
                name="relatorios_agendamento_acao",
            ),
            *super().get_urls(),
        ]

    def previa(self, request: HttpRequest) -> HttpResponse:
        """The add form's preview alone, for its script (agendamento.js)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = self.get_form(request)(request.POST, previsualizar=True)
        form.is_valid()
        return render(request, "relatorios/_previa_do_agendamento.html", {"form": form})

    def acao_no_agendamento(
        self, request: HttpRequest, agendamento_id: int, acao: str
    ) -> HttpResponse:
        agendamento = self.get_object(request, str(agendamento_id))
        if agendamento is None:
            raise Http404
        if not self.has_change_permission(request, agendamento):
            raise PermissionDenied
        if acao == "executar_agora":
            self._executar_agora(request, agendamento)
        elif acao in ACOES_DO_AGENDAMENTO:
            self._acao_de_servico(request, [agendamento], acao)
        else:
            raise Http404
        return HttpResponseRedirect(
            reverse("admin:relatorios_agendamento_change", args=[agendamento.pk])
        )

    def _executar_agora(self, request: HttpRequest, agendamento: Agendamento) -> None:
        if agendamento.excluido_em is not None:
            # The service does not look: an extra occurrence of a deleted
            # schedule would open alerts nobody is watching for.
            self.log_change(
                request, agendamento, "executar agora sem efeito: agendamento excluído"
            )
            self.message_user(
                request, "Agendamento excluído: nada foi executado.", messages.WARNING
            )
            return
        ocorrencia = disparo.executar_agora(agendamento_id=agendamento.pk)
        if ocorrencia.job_id is not None:
            self.log_change(
                request,
                agendamento,
                f"executado agora pelo suporte: ocorrência {ocorrencia.pk}, "
                f"job {ocorrencia.job_id}",
            )
            self.message_user(
                request,
                format_html(
                    "Executado agora: ocorrência {} no {}.",
                    ocorrencia.pk,
                    link_do_job(ocorrencia.job_id),
                ),
                messages.SUCCESS,
            )
            return
        self.log_change(
            request,
            agendamento,
            f"executado agora pelo suporte: ocorrência {ocorrencia.pk} "
            f"{ocorrencia.estado}: {ocorrencia.motivo}",
        )
        self.message_user(
            request,
            f"Executado agora, mas a ocorrência {ocorrencia.pk} foi "
            f"{ocorrencia.get_estado_display()}: {ocorrencia.motivo}",
            messages.WARNING,
        )

    def _acao_de_servico(
        self, request: HttpRequest, lista: list[Agendamento], nome: str
    ) -> None:
        acao = ACOES_DO_AGENDAMENTO[nome]

        def executar(agendamento: Agendamento) -> Acao:
            feito = acao.servico(agendamento_id=agendamento.pk)
            return Acao(True) if feito else Acao(False, acao.sem_efeito)

        aplicar(self, request, lista, acao.textos, executar)

    # --- bulk actions -----------------------------------------------------------------

    @admin.action(description="Pausar", permissions=["change"])
    def pausar(self, request: HttpRequest, queryset: QuerySet) -> None:
        if (lista := selecionados(self, request, queryset)) is not None:
            self._acao_de_servico(request, lista, "pausar")

    @admin.action(description="Retomar", permissions=["change"])
    def retomar(self, request: HttpRequest, queryset: QuerySet) -> None:
        if (lista := selecionados(self, request, queryset)) is not None:
            self._acao_de_servico(request, lista, "retomar")

    @admin.action(
        description="Excluir (para de disparar; o histórico fica)",
        permissions=["change"],
    )
    def excluir(self, request: HttpRequest, queryset: QuerySet) -> None:
        if (lista := selecionados(self, request, queryset)) is not None:
            self._acao_de_servico(request, lista, "excluir")


def texto_da_leitura(
    leitura: aberturas.Leitura | None, agendamento: Agendamento
) -> str:
    """ "aberto em N das últimas M entregas", with what support should know."""
    partes = ["nenhuma entrega ainda" if leitura is None else leitura.frase]
    if leitura is not None and leitura.sem_leitura and agendamento.ativo:
        partes.append(
            f"ninguém abriu as últimas {aberturas.SEM_LEITURA} (sinalizado ao gerente)"
        )
    if agendamento.entrega == FormaDeEntrega.ANEXO:
        partes.append("anexo: aberturas não rastreáveis")
    return format_html_join("", "<div>{}</div>", ((p,) for p in partes))


def acoes_possiveis(agendamento: Agendamento) -> list[str]:
    """Which buttons the change view offers (a hint: the service decides)."""
    if agendamento.excluido_em is not None:
        return []
    primeira = "pausar" if agendamento.ativo else "retomar"
    return [primeira, "executar_agora", "excluir"]
