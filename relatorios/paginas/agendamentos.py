"""The managers' schedule pages (pt-BR): their scheduled reports and alerts.

Thin like the rest of the pages: the form (`agendamentos.entrada`, shared
with the admin) collects and previews, `agendamentos` decides (creating
validates the cron, the deadline and the stores; pausing, resuming and
deleting are guarded updates), and every read is scoped to the user's
tenant, so another tenant's schedule is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib import messages
from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from relatorios.agendamentos import aberturas, agenda
from relatorios.agendamentos.entrada import AgendamentoForm
from relatorios.jobs import consultas
from relatorios.models import (
    Agendamento,
    Alerta,
    EstadoDoJob,
    EstadoOcorrencia,
    LimiteDoTenant,
    Ocorrencia,
    relogio,
)
from relatorios.paginas.comum import gerente, tenant_id_do_pedido, titulo_do_tipo

# Occurrences shown per schedule, and closed alerts shown.
OCORRENCIAS_POR_AGENDAMENTO = 3
ALERTAS_FECHADOS = 20
ALERTAS_ABERTOS = 100

_ACOES = {
    "pausar": (agenda.pausar, "Agendamento «{}» pausado.", "já estava pausado"),
    "retomar": (
        agenda.retomar,
        "Agendamento «{}» retomado: os próximos disparos voltam a acontecer.",
        "já estava ativo",
    ),
    "excluir": (agenda.excluir, "Agendamento «{}» excluído.", "já estava excluído"),
}


@require_GET
@gerente
def lista(request: HttpRequest) -> HttpResponse:
    return _pagina(request)


@require_POST
@gerente
def criar(request: HttpRequest) -> HttpResponse:
    """Create a schedule, or (the "Pré-visualizar" button) show the page
    again with the next firings of what was filled in."""
    form = _formulario(request, dados=request.POST)
    if not form.is_valid():
        previa_sem_erros = form.previsualizando and not form.errors
        return _pagina(request, form=form, status=200 if previa_sem_erros else 400)
    try:
        agendamento = form.criar(
            tenant_id=tenant_id_do_pedido(request), usuario_id=request.user.pk
        )
    except LimiteDoTenant as limite:
        form.add_error(None, str(limite))
        return _pagina(request, form=form, status=409)
    if agendamento is None:
        return _pagina(request, form=form, status=400)
    messages.success(request, f"Agendamento «{agendamento}» criado.")
    return redirect("agendamentos")


@require_POST
@gerente
def previa(request: HttpRequest) -> HttpResponse:
    """The preview alone, for the pages' script: the form's next firings and
    deadlines (or what keeps them from showing) as an HTML fragment."""
    form = _formulario(request, dados=request.POST, previsualizar=True)
    form.is_valid()
    return render(request, "relatorios/_previa_do_agendamento.html", {"form": form})


@require_POST
@gerente
def agir(request: HttpRequest, agendamento_id: int, acao: str) -> HttpResponse:
    """Pause, resume or delete one of the tenant's schedules."""
    if acao not in _ACOES:
        raise Http404("ação desconhecida")
    tenant_id = tenant_id_do_pedido(request)
    agendamento = _agendamento_do_tenant(tenant_id, agendamento_id)
    servico, feito, sem_efeito = _ACOES[acao]
    # The service is scoped too: the 404 above is for the page, this is the guard.
    if servico(agendamento_id=agendamento.pk, tenant_id=tenant_id):
        messages.success(request, feito.format(agendamento))
        if acao == "pausar":
            # Undo one click away, as a mail client's "desfazer": the page
            # offers to resume this schedule (POST, like every action).
            return redirect(f"{reverse('agendamentos')}?pausado={agendamento.pk}")
    else:
        messages.warning(
            request, f"Nada mudou: o agendamento «{agendamento}» {sem_efeito}."
        )
    return redirect("agendamentos")


def _pausado_agora(
    request: HttpRequest, agendamentos: list[Agendamento]
) -> Agendamento | None:
    """The schedule `?pausado=` names, if it is the tenant's and still paused
    (the undo offered after "Pausar")."""
    pedido = request.GET.get("pausado", "")
    if not pedido.isdigit():
        return None
    return next((a for a in agendamentos if a.pk == int(pedido) and not a.ativo), None)


def _agendamento_do_tenant(tenant_id: int, agendamento_id: int) -> Agendamento:
    if not 0 < agendamento_id <= consultas.ID_MAXIMO:
        raise Http404("agendamento não encontrado")
    agendamento = (
        Agendamento.objects.filter(
            pk=agendamento_id, tenant_id=tenant_id, excluido_em__isnull=True
        )
        .only("id")
        .first()
    )
    if agendamento is None:
        raise Http404("agendamento não encontrado")
    return agendamento


# --- The page -----------------------------------------------------------------------


@dataclass(frozen=True)
class LinhaDeAgendamento:
    """One schedule as the page shows it."""

    agendamento: Agendamento
    titulo: str
    prazo: str
    proximos: list[datetime]
    ocorrencias: list[Ocorrencia]
    # Its last deliveries' opens; None if it was never delivered.
    leitura: aberturas.Leitura | None


def _pagina(
    request: HttpRequest, *, form: AgendamentoForm | None = None, status: int = 200
) -> HttpResponse:
    tenant_id = tenant_id_do_pedido(request)
    lista_de_agendamentos = list(
        Agendamento.objects.filter(tenant_id=tenant_id, excluido_em__isnull=True)
        .select_related("tenant")
        .order_by("-ativo", "nome", "id")
    )
    ids = [a.pk for a in lista_de_agendamentos]
    ocorrencias = _ultimas_ocorrencias(ids)
    leituras = aberturas.leituras(ids)
    linhas = [
        LinhaDeAgendamento(
            agendamento=a,
            titulo=titulo_do_tipo(a.tipo),
            prazo=prazo_em_texto(a.prazo),
            proximos=agenda.proximos_disparos(a, 3),
            ocorrencias=ocorrencias.get(a.pk, []),
            leitura=leituras.get(a.pk),
        )
        for a in lista_de_agendamentos
    ]
    alertas = Alerta.objects.filter(tenant_id=tenant_id).select_related(
        "ocorrencia__agendamento"
    )
    return render(
        request,
        "relatorios/agendamentos.html",
        {
            "linhas": linhas,
            "desfazer": _pausado_agora(request, lista_de_agendamentos),
            "form": form if form is not None else _formulario(request),
            "alertas_abertos": list(
                alertas.filter(fechado_em__isnull=True).order_by("-aberto_em")[
                    :ALERTAS_ABERTOS
                ]
            ),
            "sem_leitura": [
                linha
                for linha in linhas
                if linha.agendamento.ativo
                and linha.leitura
                and linha.leitura.sem_leitura
            ],
            "ultimas_entregas": aberturas.ULTIMAS,
            "seguidas_sem_leitura": aberturas.SEM_LEITURA,
            "alertas_fechados": list(
                alertas.filter(fechado_em__isnull=False).order_by("-fechado_em")[
                    :ALERTAS_FECHADOS
                ]
            ),
        },
        status=status,
    )


def _ultimas_ocorrencias(agendamento_ids: list[int]) -> dict[int, list[Ocorrencia]]:
    """The latest few occurrences of each schedule, in one query (a window
    over the unique index on (agendamento, planejado_para))."""
    if not agendamento_ids:
        return {}
    consulta: QuerySet[Ocorrencia] = (
        Ocorrencia.objects.filter(agendamento_id__in=agendamento_ids)
        .select_related("job")
        .only(
            "id",
            "agendamento_id",
            "planejado_para",
            "estado",
            "motivo",
            "entregue_em",
            "job_id",
            "job__status",
            "tenant__fuso_horario",
        )
        .select_related("tenant")
        .annotate(
            ordem=Window(
                RowNumber(),
                partition_by=F("agendamento_id"),
                order_by=F("planejado_para").desc(),
            )
        )
        .filter(ordem__lte=OCORRENCIAS_POR_AGENDAMENTO)
        .order_by("agendamento_id", "-planejado_para")
    )
    por_agendamento: dict[int, list[Ocorrencia]] = {}
    for ocorrencia in consulta:
        ocorrencia.desfecho = desfecho(ocorrencia)  # type: ignore[attr-defined]
        por_agendamento.setdefault(ocorrencia.agendamento_id, []).append(ocorrencia)
    return por_agendamento


# Support's "executar agora" (disparo.executar_agora) writes this motivo.
MOTIVO_MANUAL = "executar agora"


def desfecho(ocorrencia: Ocorrencia) -> str:
    """A run's outcome in words, as a manager reads it: "Entregue às 15:11",
    "Falhou", "Em andamento"; "(manual)" for a run asked for by hand."""
    manual = " (manual)" if ocorrencia.motivo == MOTIVO_MANUAL else ""
    if ocorrencia.entregue_em is not None:
        hora = relogio.no_fuso(ocorrencia.entregue_em, ocorrencia.tenant.fuso_horario)
        return f"Entregue às {hora:%H:%M}{manual}"
    job = ocorrencia.job
    if ocorrencia.estado != EstadoOcorrencia.DISPARADA or job is None:
        return f"{ocorrencia.get_estado_display().split(' (')[0].capitalize()}{manual}"
    if job.status == EstadoDoJob.FALHOU:
        return f"Falhou{manual}"
    if job.status == EstadoDoJob.PRONTO:
        return f"Pronto{manual}"
    return f"Em andamento{manual}"


def prazo_em_texto(prazo: timedelta) -> str:
    """3 h, 90 min -> "1 h 30 min", 2 d: how a deadline reads on the pages."""
    minutos = int(prazo.total_seconds()) // 60
    dias, resto = divmod(minutos, 24 * 60)
    horas, minutos = divmod(resto, 60)
    partes = [f"{dias} d" if dias else "", f"{horas} h" if horas else ""]
    partes.append(f"{minutos} min" if minutos or not (dias or horas) else "")
    return " ".join(p for p in partes if p)


def _formulario(
    request: HttpRequest, dados: Any = None, *, previsualizar: bool = False
) -> AgendamentoForm:
    return AgendamentoForm(
        dados,
        lojas=consultas.lojas_do_tenant(tenant_id=tenant_id_do_pedido(request)),
        fuso=request.user.tenant.fuso_horario,  # type: ignore[union-attr]
        previsualizar=previsualizar,
    )
