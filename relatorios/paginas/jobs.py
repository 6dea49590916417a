"""Server-rendered pages for a tenant's managers (pt-BR).

A thin layer like the API: forms collect, `pedidos.submeter` decides (the
same dedup, limits and validation), `consultas` reads, scoped to the user's
tenant; another tenant's job is a 404, as in the API. Every page works without
JavaScript; with it, the job page follows the job by polling the JSON status.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats, timezone
from django.views.decorators.http import require_GET, require_POST

from relatorios import tipos
from relatorios.agendamentos import aberturas
from relatorios.apresentacao import celulas, grafico
from relatorios.apresentacao.periodos import data as _data
from relatorios.apresentacao.periodos import mes_por_extenso, resumo_dos_params
from relatorios.jobs import antecipacao, consultas, parcial, pedidos
from relatorios.models import EstadoDoJob, Periodo, RelatorioJob
from relatorios.models.jobs import ATIVOS, linhas_do_resultado
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
        submissao = pedidos.submeter(
            tenant_id=tenant_id_do_pedido(request),
            tipo=tipo,
            params_brutos=form.params_brutos(),
            usuario_id=request.user.pk,
            notificar=form.cleaned_data["notificar_email"],
            email_do_usuario=getattr(request.user, "email", None),
        )
    except normalizacao.ErroDeParametro as erro:
        form.add_error(erro.campo if erro.campo in form.fields else None, erro.mensagem)
        return _painel(request, com_erro=form, status=400)
    except pedidos.LimiteDePendentes as limite:
        messages.error(request, _mensagem_de_limite(limite))
        return _painel(request, com_erro=form, status=429)
    return redirect("pagina_do_job", job_id=submissao.job.id)


@require_POST
@gerente
def antecipar(request: HttpRequest) -> HttpResponse:
    """The managers' switch of computing ahead for their company."""
    valor = request.POST.get("antecipar")
    if valor not in ("sim", "nao"):
        messages.error(request, "antecipar: escolha «sim» ou «nao»")
        return _painel(request, status=400)
    antecipacao.ligar(tenant_id=tenant_id_do_pedido(request), ligado=valor == "sim")
    return redirect(reverse("painel") + "#antecipacao")


@require_POST
@gerente
def antecipar_padrao(request: HttpRequest) -> HttpResponse:
    """The managers' switch of one pattern (the hidden fields of its row)."""
    acao = request.POST.get("acao")
    try:
        if acao not in ("desligar", "ligar"):
            raise normalizacao.ErroDeParametro("acao", "escolha «desligar» ou «ligar»")
        try:
            resto = json.loads(request.POST.get("resto", ""))
        except ValueError:
            raise normalizacao.ErroDeParametro(
                "resto", "deve ser um objeto JSON"
            ) from None
        antecipacao.desligar_padrao(
            tenant_id=tenant_id_do_pedido(request),
            tipo=request.POST.get("tipo", ""),
            periodo=request.POST.get("periodo", ""),
            resto=resto,
            desligado=acao == "desligar",
        )
    except normalizacao.ErroDeParametro as erro:
        messages.error(request, f"{erro.campo}: {erro.mensagem}")
        return _painel(request, status=400)
    return redirect(reverse("painel") + "#antecipacao")


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
    situacao = antecipacao.situacao(tenant_id=tenant_id_do_pedido(request))
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
            "antecipacao": situacao,
            "padroes_antecipados": [
                {
                    "padrao": p,
                    "titulo": titulo_do_tipo(p.tipo),
                    "periodo": Periodo(p.periodo).label,
                    "resto": json.dumps(p.resto, sort_keys=True),
                    "lojas": ", ".join(p.resto.get("lojas") or []) or "todas",
                }
                for p in situacao.padroes
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
    elif job.status == EstadoDoJob.EXECUTANDO and parcial.ligado():
        contexto.update(_tabela_parcial(job))
    return contexto


def _tabela(job: RelatorioJob) -> dict[str, Any]:
    resumo = consultas.resumo_do_resultado(job)
    if resumo.n_linhas is None:
        # A result without lines (not a table): shown as it is.
        return {"resultado_bruto": resumo.resto}
    linhas = list(linhas_do_resultado(job, limite=LINHAS_NA_PAGINA))
    return {
        **_na_tabela(job, linhas, resumo.n_linhas, resumo.resto),
        "url_csv": reverse("resultado_csv", args=[job.pk]),
        "url_xlsx": reverse("resultado_xlsx", args=[job.pk]),
        "grafico": grafico.dados(job),
    }


def _na_tabela(
    job: RelatorioJob,
    linhas: list[dict[str, Any]],
    n_linhas: int,
    resto: dict[str, Any],
) -> dict[str, Any]:
    """The table of a result (finished or partial): its first lines, and a
    totals row that says what it totals when the table shows only part."""
    colunas = celulas.colunas(job.tipo, linhas[0] if linhas else None)
    totais = celulas.totais_na_pagina(colunas, resto.get("totais"))
    cortadas = n_linhas > len(linhas)
    if totais and cortadas:
        # The totals are of every line, not of the ones on the page.
        n = formats.number_format(n_linhas, use_l10n=True, force_grouping=True)
        totais[0] = f"Total do período, todas as {n} linhas"
    return {
        "colunas": colunas,
        "linhas": [celulas.linha_na_tabela(colunas, linha) for linha in linhas],
        "totais": totais,
        "n_linhas": n_linhas,
        "linhas_cortadas": cortadas,
        "comparacao": _comparacao(resto),
    }


def _comparacao(resto: dict[str, Any]) -> str | None:
    """The heading of a result that compares a month with the one before
    (`fechamento`): "novembro de 2026 comparado com outubro de 2026"."""
    mes, anterior = resto.get("mes"), resto.get("mes_anterior")
    if not (isinstance(mes, str) and isinstance(anterior, str)):
        return None
    try:
        return f"{mes_por_extenso(mes)} comparado com {mes_por_extenso(anterior)}"
    except ValueError:
        return None


def _tabela_parcial(job: RelatorioJob) -> dict[str, Any]:
    """A running job's chunks done so far, drawn as the finished result is
    (its first lines, its totals so far, its chart), without the files."""
    estado = consultas.estado_do_job(tenant_id=job.tenant_id, job_id=job.pk)
    atual = estado.parcial
    if atual is None or not isinstance(atual["resultado"], dict):
        return {}
    resultado = atual["resultado"]
    todas = resultado.get("linhas")
    if not isinstance(todas, list):
        return {}
    cobre = atual["cobre"]
    return {
        "parcial": {
            "feitas": atual["partes"]["feitas"],
            "total": atual["partes"]["total"],
            "cobre": f"{_data(cobre['inicio'])} a {_data(cobre['fim'])}"
            if cobre
            else None,
        },
        **_na_tabela(job, todas[:LINHAS_NA_PAGINA], len(todas), resultado),
        "grafico": grafico.dados_do_resultado(job.tipo, job.params_dict(), resultado),
    }
