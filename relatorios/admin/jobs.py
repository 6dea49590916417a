"""Support staff's view of tenants, users and jobs.

Jobs are read-only here: every change of state is one of the actions below,
and each action calls `jobs.suporte` (the API's own rules: dedup, the tenant's
limits, the fence on a running worker's writes), never `save()`. Each is
written to Django's admin log with the job and the reason.

The job list is built for millions of rows: heavy jsonb columns deferred, no
per-row query, an estimated count above a few thousand rows, no facet counts,
a date hierarchy bounded by one MIN/MAX, filters whose choices come from code,
and a search that only uses indexes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from relatorios.admin import comum, indicadores
from relatorios.admin.comum import (
    FiltroTipo,
    SomenteLeitura,
    Textos,
    curto,
    tipo_legivel,
)
from relatorios.admin.paginacao import PaginadorEstimado
from relatorios.apresentacao import planilha
from relatorios.jobs import consultas, suporte
from relatorios.jobs.suporte import Acao
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant, relogio
from relatorios.models.jobs import ATIVOS
from relatorios.operacao.downloads import resposta_de_download

# How much of params/resultado/checkpoint/traceback the change view shows.
LIMITE_DO_TRECHO = 20_000


_HEX = re.compile(r"[0-9a-f]{4,64}")


class FiltroSituacao(admin.SimpleListFilter):
    """What support looks for: failed, stuck, waiting too long, expired, retried."""

    title = "situação"
    parameter_name = "situacao"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        minutos = settings.RELATORIOS_PENDENTE_ANTIGO_S // 60
        opcoes = [
            ("falhou", "falhou"),
            ("travado", "travado (sem batimento)"),
            ("pendente_antigo", f"pendente há mais de {minutos} min"),
            ("expirado", "resultado expirado"),
        ]
        maximo = max(3, settings.RELATORIOS_MAX_TENTATIVAS)
        opcoes += [
            (f"tentativas_{n}", f"tentativas ≥ {n}") for n in range(2, maximo + 1)
        ]
        return opcoes

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        valor = self.value()
        if valor == "falhou":
            return queryset.filter(status=EstadoDoJob.FALHOU)
        if valor == "travado":
            return queryset & RelatorioJob.objects.travados()
        if valor == "pendente_antigo":
            return queryset & indicadores.pendentes_antigos()
        if valor == "expirado":
            return queryset & RelatorioJob.objects.expirados()
        if valor and (achado := re.fullmatch(r"tentativas_(\d{1,4})", valor)):
            return queryset.filter(tentativas__gte=int(achado[1]))
        return None


class MotivoForm(forms.Form):
    motivo = forms.CharField(
        label="Motivo (o gerente verá este texto como erro do relatório)",
        max_length=500,
        widget=forms.TextInput(attrs={"size": 80}),
    )


@admin.register(RelatorioJob)
class RelatorioJobAdmin(SomenteLeitura, admin.ModelAdmin):
    list_display = (
        "id",
        "tenant",
        tipo_legivel,
        "status_colorido",
        "tentativas",
        "idade",
        "desde_o_batimento",
        "duracao",
        "erro_resumido",
    )
    list_display_links = ("id",)
    list_filter = ("status", FiltroTipo, FiltroSituacao, "tenant")
    list_select_related = ("tenant",)
    search_fields = ("=id", "chave", "tenant__nome")  # see get_search_results
    search_help_text = "id do job, início da chave ou parte do nome do tenant"
    date_hierarchy = "criado_em"
    ordering = ("-criado_em",)
    paginator = PaginadorEstimado
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions = ("reexecutar", "marcar_como_falhou", "expirar_resultado")
    change_list_template = "admin/relatorios/relatoriojob/change_list.html"
    change_form_template = "admin/relatorios/relatoriojob/change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    ("id", "status_colorido"),
                    ("tenant", "tipo"),
                    ("solicitado_por", "progresso", "tentativas"),
                    "chave",
                )
            },
        ),
        ("Linha do tempo", {"fields": ("linha_do_tempo",)}),
        ("Erro", {"fields": ("erro", "traceback")}),
        ("Parâmetros", {"fields": ("params_formatados",)}),
        ("Resultado", {"fields": ("resultado_formatado",)}),
        ("Checkpoint", {"fields": ("checkpoint_formatado",)}),
    )

    class Media:
        css = {"all": ("relatorios/admin.css",)}

    # --- permissions: nobody edits, adds or deletes a job by hand (SomenteLeitura)

    def lookup_allowed(self, lookup: str, value: str, request: Any = None) -> bool:
        # The dashboard's "Falhas por motivo" links a reason here, with
        # status=falhou: the failed jobs' partial index bounds the scan.
        if lookup == "erro__startswith":
            return True
        return super().lookup_allowed(lookup, value, request)

    def has_operar_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("relatorios.operar_relatoriojob"))

    # --- list -------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The jsonb columns and the traceback can be megabytes per row; the
        # change view reads cut excerpts of them in SQL (indicadores.trechos).
        return (
            super()
            .get_queryset(request)
            .defer("params", "resultado", "checkpoint", "erro_detalhe")
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        # Django's default ORs `id = x`, `chave LIKE 'x%'` and a join on the
        # tenant's name into one condition no index serves. Each branch here is
        # an index lookup (primary key, a range on the unique chave, tenant ids),
        # which PostgreSQL combines with a BitmapOr.
        termo = search_term.strip()
        if not termo:
            return queryset, False
        condicao = Q()
        if termo.isdigit() and 0 < int(termo) <= consultas.ID_MAXIMO:
            condicao |= Q(pk=int(termo))
        prefixo = termo.lower()
        if _HEX.fullmatch(prefixo):
            # A range, not LIKE: an index answers it under any collation.
            condicao |= Q(chave__gte=prefixo, chave__lt=prefixo + "g")
        tenants = list(
            Tenant.objects.filter(nome__icontains=termo).values_list("pk", flat=True)[
                :1000
            ]
        )
        if tenants:
            condicao |= Q(tenant_id__in=tenants)
        if not condicao:
            return queryset.none(), False
        return queryset.filter(condicao), False

    @admin.display(description="status", ordering="status")
    def status_colorido(self, job: RelatorioJob) -> str:
        situacao = str(job.status)
        if job.status == EstadoDoJob.EXECUTANDO and _travado(job):
            situacao = "travado"
        return format_html(
            '<span class="job-status job-status-{}">{}</span>',
            situacao,
            job.status if situacao == job.status else f"{job.status} (travado)",
        )

    @admin.display(description="idade", ordering="criado_em")
    def idade(self, job: RelatorioJob) -> str:
        return curto(timezone.now() - job.criado_em)

    @admin.display(description="último batimento")
    def desde_o_batimento(self, job: RelatorioJob) -> str:
        if job.status != EstadoDoJob.EXECUTANDO or job.heartbeat_em is None:
            return "—"
        return f"há {curto(timezone.now() - job.heartbeat_em)}"

    @admin.display(description="duração")
    def duracao(self, job: RelatorioJob) -> str:
        if job.iniciado_em is None:
            return "—"
        if job.concluido_em is not None and job.concluido_em >= job.iniciado_em:
            return curto(job.concluido_em - job.iniciado_em)
        if job.status == EstadoDoJob.EXECUTANDO:
            return f"{curto(timezone.now() - job.iniciado_em)} (em curso)"
        return "—"

    @admin.display(description="erro")
    def erro_resumido(self, job: RelatorioJob) -> str:
        if not job.erro:
            return ""
        resumo = job.erro if len(job.erro) <= 80 else job.erro[:79] + "…"
        return format_html('<span title="{}">{}</span>', job.erro, resumo)

    # --- change view (read-only) -------------------------------------------------

    def _trechos(self, job: RelatorioJob) -> dict[str, indicadores.Trecho | None]:
        if not hasattr(job, "_trechos"):
            job._trechos = indicadores.trechos(  # type: ignore[attr-defined]
                job.pk, limite=LIMITE_DO_TRECHO
            )
        return job._trechos  # type: ignore[attr-defined]

    def _pre(self, job: RelatorioJob, coluna: str, download: str = "") -> str:
        trecho = self._trechos(job).get(coluna)
        if trecho is None:
            return "—"
        aviso = ""
        if trecho.truncado:
            aviso = format_html(
                '<p class="job-truncado">Mostrando {} de {} caracteres. {}</p>',
                f"{len(trecho.texto):n}",
                f"{trecho.tamanho:n}",
                download or "",
            )
        return format_html('{}<pre class="job-json">{}</pre>', aviso, trecho.texto)

    @admin.display(description="parâmetros")
    def params_formatados(self, job: RelatorioJob) -> str:
        return self._pre(job, "params")

    @admin.display(description="resultado")
    def resultado_formatado(self, job: RelatorioJob) -> str:
        links = ""
        if job.status == EstadoDoJob.PRONTO:
            links = format_html(
                'Baixe completo: <a href="{}">JSON</a> · <a href="{}">CSV</a>.',
                reverse("admin:relatorios_relatoriojob_resultado_json", args=[job.pk]),
                reverse("admin:relatorios_relatoriojob_resultado_csv", args=[job.pk]),
            )
        return self._pre(job, "resultado", links)

    @admin.display(description="checkpoint")
    def checkpoint_formatado(self, job: RelatorioJob) -> str:
        return self._pre(job, "checkpoint")

    @admin.display(description="traceback (só para a equipe)")
    def traceback(self, job: RelatorioJob) -> str:
        return self._pre(job, "erro_detalhe")

    @admin.display(description="eventos")
    def linha_do_tempo(self, job: RelatorioJob) -> str:
        eventos = indicadores.linha_do_tempo(job)
        fuso = job.tenant.fuso_horario
        linhas = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    relogio.hora_local(e.quando, fuso, segundos=True),
                    e.o_que,
                    e.detalhe,
                )
                for e in eventos
            ),
        )
        return format_html(
            '<table class="job-linha-do-tempo"><thead><tr><th>quando ({})</th>'
            "<th>o quê</th><th>detalhe</th></tr></thead><tbody>{}</tbody></table>"
            "<p>Tentativas: {} de {}.</p>",
            relogio.nome_do_fuso(fuso),
            linhas,
            job.tentativas,
            settings.RELATORIOS_MAX_TENTATIVAS,
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        contexto = dict(extra_context or {})
        job = self.get_object(request, object_id)
        if job is not None and self.has_operar_permission(request):
            contexto["acoes_do_job"] = acoes_possiveis(job)
            contexto["motivo_form"] = MotivoForm()
        return super().change_view(request, object_id, form_url, contexto)

    # --- extra URLs: one-job actions and the full downloads ------------------------

    def get_urls(self) -> list[URLPattern]:
        proprias = [
            path(
                "<int:job_id>/acoes/<slug:acao>/",
                self.admin_site.admin_view(require_POST(self.acao_no_job)),
                name="relatorios_relatoriojob_acao",
            ),
            path(
                "<int:job_id>/resultado.json",
                self.admin_site.admin_view(self.resultado_json),
                name="relatorios_relatoriojob_resultado_json",
            ),
            path(
                "<int:job_id>/resultado.csv",
                self.admin_site.admin_view(self.resultado_csv),
                name="relatorios_relatoriojob_resultado_csv",
            ),
        ]
        return proprias + super().get_urls()

    def acao_no_job(self, request: HttpRequest, job_id: int, acao: str) -> HttpResponse:
        if not self.has_operar_permission(request):
            raise PermissionDenied
        job = self.get_object(request, str(job_id))
        if job is None:
            raise Http404
        if acao == "marcar_como_falhou":
            form = MotivoForm(request.POST)
            if not form.is_valid():
                self.message_user(request, "Informe o motivo.", messages.ERROR)
                return HttpResponseRedirect(_url_do_job(job_id))
            motivo = form.cleaned_data["motivo"]
            self._aplicar(
                request,
                [job],
                "marcar_como_falhou",
                lambda j: suporte.marcar_como_falhou(job_id=j, motivo=motivo),
                motivo=motivo,
            )
        elif acao in ("reexecutar", "expirar_resultado"):
            servico = getattr(suporte, acao)
            self._aplicar(
                request,
                [job],
                acao,
                lambda j: servico(job_id=j),
            )
        else:
            raise Http404
        return HttpResponseRedirect(_url_do_job(job_id))

    def resultado_json(self, request: HttpRequest, job_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        texto = indicadores.resultado_em_texto(job_id)
        if texto is None:
            raise Http404
        resposta = HttpResponse(texto, content_type="application/json")
        resposta["Content-Disposition"] = (
            f'attachment; filename="job-{job_id}-resultado.json"'
        )
        return resposta

    def resultado_csv(self, request: HttpRequest, job_id: int) -> HttpResponseBase:
        if not self.has_view_permission(request):
            raise PermissionDenied
        job = (
            RelatorioJob.objects.filter(pk=job_id)
            .only("id", "tenant_id", "tipo", "status", "params")
            .first()
        )
        if job is None or job.status != EstadoDoJob.PRONTO:
            raise Http404
        return resposta_de_download(
            planilha.linhas_csv(job),
            nome=planilha.nome_do_arquivo(job),
            tamanho=None,
            tipo_de_conteudo=planilha.TIPO_DE_CONTEUDO,
        )

    # --- bulk actions ---------------------------------------------------------------

    @admin.action(
        description="Reexecutar (falhou, travado ou expirado)", permissions=["operar"]
    )
    def reexecutar(self, request: HttpRequest, queryset: QuerySet) -> None:
        jobs = self.selecionados(request, queryset)
        if jobs is not None:
            self._aplicar(
                request,
                jobs,
                "reexecutar",
                lambda j: suporte.reexecutar(job_id=j),
            )

    @admin.action(
        description="Marcar como falhou (pede o motivo)", permissions=["operar"]
    )
    def marcar_como_falhou(
        self, request: HttpRequest, queryset: QuerySet
    ) -> TemplateResponse | None:
        jobs = self.selecionados(request, queryset)
        if jobs is None:
            return None
        form = MotivoForm(request.POST if "confirmar" in request.POST else None)
        if form.is_valid():
            motivo = form.cleaned_data["motivo"]
            self._aplicar(
                request,
                jobs,
                "marcar_como_falhou",
                lambda j: suporte.marcar_como_falhou(job_id=j, motivo=motivo),
                motivo=motivo,
            )
            return None
        # First step (or an empty reason): ask, as Django's delete confirmation does.
        return TemplateResponse(
            request,
            "admin/relatorios/relatoriojob/marcar_como_falhou.html",
            {
                **self.admin_site.each_context(request),
                "title": "Marcar como falhou",
                "opts": self.model._meta,
                "jobs": jobs,
                "form": form,
                "acao": "marcar_como_falhou",
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            },
        )

    @admin.action(
        description="Expirar resultado (o próximo pedido recalcula)",
        permissions=["operar"],
    )
    def expirar_resultado(self, request: HttpRequest, queryset: QuerySet) -> None:
        jobs = self.selecionados(request, queryset)
        if jobs is not None:
            self._aplicar(
                request,
                jobs,
                "expirar_resultado",
                lambda j: suporte.expirar_resultado(job_id=j),
            )

    def selecionados(
        self, request: HttpRequest, queryset: QuerySet
    ) -> list[RelatorioJob] | None:
        return comum.selecionados(
            self,
            request,
            queryset.select_related(None).only("id", "tipo", "status"),
            quais="jobs",
        )

    def _aplicar(
        self,
        request: HttpRequest,
        jobs: list[RelatorioJob],
        nome: str,
        acao: Callable[[int], Acao],
        *,
        motivo: str = "",
    ) -> None:
        comum.aplicar(
            self,
            request,
            jobs,
            TEXTOS_DAS_ACOES[nome],
            lambda job: acao(job.pk),
            detalhe=f"motivo: {motivo}" if motivo else "",
        )


def _textos_de_jobs(acao: str, singular: str, plural: str, registro: str) -> Textos:
    # "1 job reexecutado." / "2 jobs sem mudança: ...": the tally counts jobs.
    return Textos(
        acao,
        feito=singular,
        registro=registro,
        mensagem_feitos=lambda t, n: f"{_jobs(n)} {singular if n == 1 else plural}.",
        mensagem_ignorados=lambda t, n, razoes: f"{_jobs(n)} sem mudança: {razoes}.",
    )


TEXTOS_DAS_ACOES = {
    "reexecutar": _textos_de_jobs(
        "reexecutar", "reexecutado", "reexecutados", "reexecutado"
    ),
    "marcar_como_falhou": _textos_de_jobs(
        "marcar como falhou",
        "marcado como falhou",
        "marcados como falhou",
        "marcado como falhou",
    ),
    "expirar_resultado": _textos_de_jobs(
        "expirar resultado",
        "teve o resultado expirado",
        "tiveram o resultado expirado",
        "resultado expirado",
    ),
}


def acoes_possiveis(job: RelatorioJob) -> list[str]:
    """Which actions the change view offers (a hint: the service decides)."""
    acoes = []
    agora = timezone.now()
    if (
        job.status == EstadoDoJob.FALHOU
        or (job.status == EstadoDoJob.EXECUTANDO and _travado(job))
        or (
            job.status == EstadoDoJob.PRONTO and job.expira_em and job.expira_em < agora
        )
    ):
        acoes.append("reexecutar")
    if job.status in ATIVOS:
        acoes.append("marcar_como_falhou")
    if job.status == EstadoDoJob.PRONTO and job.expira_em and job.expira_em > agora:
        acoes.append("expirar_resultado")
    return acoes


def _travado(job: RelatorioJob) -> bool:
    limite = timezone.now() - timedelta(seconds=settings.RELATORIOS_ORFAO_APOS_S)
    return job.heartbeat_em is not None and job.heartbeat_em < limite


def _url_do_job(job_id: int) -> str:
    return reverse("admin:relatorios_relatoriojob_change", args=[job_id])


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"
