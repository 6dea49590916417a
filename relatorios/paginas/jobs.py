"""Server-rendered pages for a tenant's managers (pt-BR).

A thin layer like the API: forms collect, `pedidos.submeter` decides (the
same dedup, limits and validation), `consultas` reads, scoped to the user's
tenant; another tenant's job is a 404, as in the API. Every page works without
JavaScript; with it, the job page follows the job by polling the JSON status.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from relatorios import tipos
from relatorios.agendamentos import aberturas
from relatorios.apresentacao import celulas, grafico
from relatorios.jobs import consultas, pedidos
from relatorios.models import EstadoDoJob, RelatorioJob
from relatorios.models.jobs import ATIVOS, linhas_do_resultado
from relatorios.notificacoes.email import email_para_notificar, inscrever
from relatorios.paginas.comum import gerente, tenant_id_do_pedido, titulo_do_tipo
from relatorios.paginas.forms import PedidoForm
from relatorios.tipos import normalizacao

# Lines of a result shown on the page; the CSV has them all.
LINHAS_NA_PAGINA = 500

ROTULOS = {
    EstadoDoJob.PENDENTE: "Na fila",
    EstadoDoJob.EXECUTANDO: "Executando",
    EstadoDoJob.PRONTO: "Pronto",
    EstadoDoJob.FALHOU: "Falhou",
}

_CAMPOS_DA_PAGINA = (
    "id",
    "tenant_id",
    "tipo",
    "status",
    "params",
    "progresso",
    "tentativas",
    "erro",
    "criado_em",
    "iniciado_em",
    "concluido_em",
    "expira_em",
    "proxima_tentativa_em",
    "solicitado_por",
)

# --- /painel/ -------------------------------------------------------------------


@require_GET
@gerente
def painel(request: HttpRequest) -> HttpResponse:
    return _painel(request)


@require_POST
@gerente
def solicitar(request: HttpRequest, tipo: str) -> HttpResponse:
    """Submit a request: the job page of the job that answers it (new or not)."""
    try:
        tipo_relatorio = tipos.obter(tipo)
    except tipos.TipoDesconhecido:
        raise Http404("tipo desconhecido") from None
    form = _formulario(request, tipo_relatorio, dados=request.POST)
    if not form.is_valid():
        return _painel(request, com_erro=form, status=400)
    try:
        email = email_para_notificar(
            valor=form.cleaned_data["notificar_email"],
            email_do_usuario=getattr(request.user, "email", None),
            tenant_id=tenant_id_do_pedido(request),
        )
        submissao = pedidos.submeter(
            tenant_id=tenant_id_do_pedido(request),
            tipo=tipo,
            params_brutos=form.params_brutos(),
            usuario_id=request.user.pk,
        )
        if email is not None and submissao.job.status in ATIVOS:
            inscrever(job_id=submissao.job.id, email=email)
    except normalizacao.ErroDeParametro as erro:
        form.add_error(erro.campo if erro.campo in form.fields else None, erro.mensagem)
        return _painel(request, com_erro=form, status=400)
    except pedidos.LimiteDePendentes as limite:
        messages.error(request, _mensagem_de_limite(limite))
        return _painel(request, com_erro=form, status=429)
    return redirect("pagina_do_job", job_id=submissao.job.id)


def _painel(
    request: HttpRequest, *, com_erro: PedidoForm | None = None, status: int = 200
) -> HttpResponse:
    formularios = [
        com_erro
        if com_erro is not None and com_erro.tipo.tipo == tipo.tipo
        else _formulario(request, tipo)
        for tipo in tipos.registro().values()
    ]
    recentes = consultas.jobs_recentes(tenant_id=tenant_id_do_pedido(request))
    return render(
        request,
        "relatorios/painel.html",
        {
            "formularios": formularios,
            "recentes": [ItemRecente.de(job) for job in recentes],
            "com_erro": com_erro,
            "alertas_abertos": consultas.alertas_abertos(
                tenant_id=tenant_id_do_pedido(request)
            ),
            "agendados": [
                {
                    "agendamento": a,
                    "titulo": titulo_do_tipo(a.tipo),
                    "periodo": resumo_dos_params(a.params or {}),
                }
                for a in consultas.agendamentos_no_painel(
                    tenant_id=tenant_id_do_pedido(request)
                )
            ],
        },
        status=status,
    )


def _formulario(
    request: HttpRequest, tipo: tipos.TipoRelatorio, dados: Any = None
) -> PedidoForm:
    return PedidoForm(
        dados,
        tipo=tipo,
        lojas=consultas.lojas_do_tenant(tenant_id=tenant_id_do_pedido(request)),
        hoje=timezone.localdate(),
    )


def _mensagem_de_limite(limite: pedidos.LimiteDePendentes) -> str:
    return (
        f"Sua empresa já tem {limite.limite} relatórios na fila. Aguarde alguns "
        "terminarem e tente de novo."
    )


@dataclass(frozen=True)
class ItemRecente:
    """One line of the recent jobs list."""

    id: int
    titulo: str
    resumo: str
    status: str
    rotulo: str
    progresso: int
    solicitado_por: str
    criado_em: datetime

    @classmethod
    def de(cls, job: RelatorioJob) -> ItemRecente:
        usuario = job.solicitado_por
        agendamento = getattr(job, "agendamento_nome", None)
        if usuario:
            quem = usuario.get_full_name() or usuario.username
        elif agendamento is not None:
            # A scheduled job: the schedule asked for it, by name.
            quem = f"agendamento «{agendamento or 'sem nome'}»"
        else:
            quem = "—"
        return cls(
            id=job.pk,
            titulo=titulo_do_tipo(job.tipo),
            resumo=resumo_dos_params(job.params_dict()),
            status=job.status,
            rotulo=ROTULOS.get(EstadoDoJob(job.status), job.status),
            progresso=job.progresso,
            solicitado_por=quem,
            criado_em=job.criado_em,
        )


# --- /painel/jobs/<id>/ ------------------------------------------------------------


@require_GET
@gerente
def pagina_do_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job(request, job_id)
    if job.status == EstadoDoJob.PRONTO:
        # A scheduled report read on its page (not the polled fragment below).
        aberturas.registrar_job(
            tenant_id=job.tenant_id, job_id=job.pk, usuario=request.user
        )
    return render(request, "relatorios/job.html", _contexto_do_job(job))


@require_GET
@gerente
def estado_do_job(request: HttpRequest, job_id: int) -> HttpResponse:
    """The changing part of the job page, for the page's script to swap in."""
    job = _job(request, job_id)
    resposta = render(request, "relatorios/_estado_do_job.html", _contexto_do_job(job))
    resposta["Cache-Control"] = "no-store"
    return resposta


@require_POST
@gerente
def repetir(request: HttpRequest, job_id: int) -> HttpResponse:
    """ "Tentar novamente": submit the job's own parameters again, through the
    same service (a failed or expired job restarts on its own row)."""
    job = consultas.job_do_tenant(
        tenant_id=tenant_id_do_pedido(request),
        job_id=job_id,
        campos=("id", "tipo", "params"),
    )
    destino = job.pk
    try:
        destino = pedidos.submeter(
            tenant_id=tenant_id_do_pedido(request),
            tipo=job.tipo,
            params_brutos=job.params_dict(),
            usuario_id=request.user.pk,
        ).job.id
    except normalizacao.ErroDeParametro as erro:
        # E.g. a store of the request was removed since.
        messages.error(request, f"Não foi possível repetir o pedido: {erro.mensagem}")
    except pedidos.LimiteDePendentes as limite:
        messages.error(request, _mensagem_de_limite(limite))
    except tipos.TipoDesconhecido:
        messages.error(request, "Este tipo de relatório não existe mais.")
    return redirect("pagina_do_job", job_id=destino)


def _job(request: HttpRequest, job_id: int) -> RelatorioJob:
    return consultas.job_do_tenant(
        tenant_id=tenant_id_do_pedido(request), job_id=job_id, campos=_CAMPOS_DA_PAGINA
    )


def _contexto_do_job(job: RelatorioJob) -> dict[str, Any]:
    agora = timezone.now()
    expirado = job.status == EstadoDoJob.PRONTO and bool(
        job.expira_em and job.expira_em < agora
    )
    contexto: dict[str, Any] = {
        "job": job,
        "titulo": titulo_do_tipo(job.tipo),
        "resumo": resumo_dos_params(job.params_dict()),
        "rotulo": ROTULOS.get(EstadoDoJob(job.status), job.status),
        "ativo": job.status in ATIVOS,
        "expirado": expirado,
        "retry_after": consultas.RETRY_AFTER_S,
        "url_status": reverse("job", args=[job.pk]),
        # Served by the events process, on this origin through the proxy.
        "url_eventos": reverse("job", args=[job.pk]) + "/eventos",
        "url_estado": reverse("estado_do_job", args=[job.pk]),
        "url_repetir": reverse("repetir", args=[job.pk]),
    }
    if job.status == EstadoDoJob.PRONTO:
        contexto.update(_tabela(job))
    return contexto


def _tabela(job: RelatorioJob) -> dict[str, Any]:
    resumo = consultas.resumo_do_resultado(job)
    if resumo.n_linhas is None:
        # A result without lines (not a table): shown as it is.
        return {"resultado_bruto": resumo.resto}
    linhas = list(linhas_do_resultado(job, limite=LINHAS_NA_PAGINA))
    colunas = celulas.colunas(job.tipo, linhas[0] if linhas else None)
    return {
        "colunas": colunas,
        "numericas": {i for i, c in enumerate(colunas) if c.numerica},
        "linhas": [celulas.linha_na_pagina(colunas, linha) for linha in linhas],
        "totais": celulas.totais_na_pagina(colunas, resumo.resto.get("totais")),
        "n_linhas": resumo.n_linhas,
        "linhas_cortadas": resumo.n_linhas > len(linhas),
        "url_csv": reverse("resultado_csv", args=[job.pk]),
        "url_xlsx": reverse("resultado_xlsx", args=[job.pk]),
        "grafico": grafico.dados(job),
    }


def resumo_dos_params(params: dict[str, Any]) -> str:
    """ "01/01/2026 a 31/01/2026 · por dia · lojas L001, L002"."""
    partes = []
    if "inicio" in params and "fim" in params:
        partes.append(f"{_data(params['inicio'])} a {_data(params['fim'])}")
    if "agrupar" in params:
        partes.append("por mês" if params["agrupar"] == "mes" else "por dia")
    lojas = params.get("lojas") or []
    if not lojas:
        partes.append("todas as lojas")
    elif len(lojas) <= 5:
        partes.append("lojas " + ", ".join(lojas))
    else:
        partes.append(f"{len(lojas)} lojas")
    return " · ".join(partes)


def _data(iso: str) -> str:
    ano, mes, dia = iso.split("-")
    return f"{dia}/{mes}/{ano}"
