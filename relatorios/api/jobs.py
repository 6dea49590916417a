"""The report API: a thin layer over `pedidos` and `consultas`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponseBase
from rest_framework import exceptions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from relatorios.agendamentos import aberturas
from relatorios.api import esquema, negociacao
from relatorios.api.autenticacao import TokenComCache
from relatorios.api.limites import ContaNaConsulta, contagem_do_pedido
from relatorios.api.permissoes import SoUsuarioDeTenant, tenant_do_pedido
from relatorios.api.serializers import (
    corpo_aceito,
    corpo_em_andamento,
    corpo_falhou,
    corpo_pronto,
)
from relatorios.apresentacao import planilha
from relatorios.jobs import consultas, pedidos
from relatorios.models import EstadoDoJob, RelatorioJob
from relatorios.notificacoes import arquivos
from relatorios.operacao.downloads import resposta_de_download

# Seed 000: a client polling a pending job should come back in two seconds.


def representar(job: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Body and headers for a job's current state (status endpoint)."""
    if job.status == EstadoDoJob.PRONTO:
        return corpo_pronto(job), {}
    if job.status == EstadoDoJob.FALHOU:
        return corpo_falhou(job), {}
    return corpo_em_andamento(job), {"Retry-After": consultas.RETRY_AFTER_S}


def local_do_job(job_id: int) -> str:
    return f"/relatorios/jobs/{job_id}"


class SubmeterRelatorio(SoUsuarioDeTenant, ContaNaConsulta, APIView):
    """POST /relatorios/<tipo>: 202 and a job id, or 200 with a valid result."""

    # Documented once per registered type (relatorios/api/esquema/).
    schema = esquema.EsquemaDoSubmeter()

    def post(self, request: Request, tipo: str) -> Response:
        params_brutos, notificar = _separar_notificacao(request.data)
        submissao = pedidos.submeter(
            tenant_id=tenant_do_pedido(request),
            tipo=tipo,
            params_brutos=params_brutos,
            usuario_id=request.user.pk,
            contagem=contagem_do_pedido(request),
            notificar=notificar,
            email_do_usuario=getattr(request.user, "email", None),
        )
        job = submissao.job
        cabecalhos = {"Location": local_do_job(job.id)}
        if job.status == EstadoDoJob.PRONTO:
            return Response(corpo_pronto(job), headers=cabecalhos)
        cabecalhos["Retry-After"] = consultas.RETRY_AFTER_S
        return Response(
            corpo_aceito(job),
            status=status.HTTP_202_ACCEPTED,
            headers=cabecalhos,
        )


def _separar_notificacao(dados: Any) -> tuple[Any, Any]:
    """`notificar_email` is about the requester, not the report: taken out
    before normalization, so it is neither a parameter nor part of the chave."""
    if not isinstance(dados, Mapping) or "notificar_email" not in dados:
        return dados, False
    params = {c: v for c, v in dados.items() if c != "notificar_email"}
    return params, dados["notificar_email"]


# The token first: its WWW-Authenticate header is the one a 401 carries. The
# session lets the manager pages' script poll with the browser's login (DRF
# checks CSRF for session-authenticated unsafe methods; these are GETs).
TOKEN_OU_SESSAO = [TokenComCache, SessionAuthentication]


class StatusDoJob(SoUsuarioDeTenant, ContaNaConsulta, APIView):
    """GET /relatorios/jobs/<id>: the job's state, scoped to the caller's tenant."""

    authentication_classes = TOKEN_OU_SESSAO

    @esquema.status_do_job
    def get(self, request: Request, job_id: int) -> Response:
        job = consultas.estado_do_job(
            tenant_id=tenant_do_pedido(request),
            job_id=job_id,
            contagem=contagem_do_pedido(request),
        )
        corpo, cabecalhos = representar(job)
        return Response(corpo, headers=cabecalhos)


class ResultadoIndisponivel(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "o relatório não está pronto"


class _ArquivoDoResultado(APIView):
    """A `pronto` job's result as a file: tenant-scoped, 409 until `pronto`."""

    authentication_classes = TOKEN_OU_SESSAO
    content_negotiation_class = negociacao.SemNegociacao

    def arquivo(self, request: Request, job_id: int) -> RelatorioJob:
        job = consultas.job_do_tenant(
            tenant_id=tenant_do_pedido(request),
            job_id=job_id,
            campos=("id", "tenant_id", "tipo", "status", "params", "concluido_em"),
        )
        if job.status != EstadoDoJob.PRONTO:
            raise ResultadoIndisponivel(
                f"o relatório não está pronto (status: {job.status})"
            )
        # A scheduled report's file downloaded: its delivery was opened
        # (never on the status endpoint, which clients poll).
        aberturas.registrar_job(
            tenant_id=job.tenant_id, job_id=job.pk, usuario=request.user
        )
        return job


class ResultadoCsv(_ArquivoDoResultado):
    """GET /relatorios/jobs/<id>/resultado.csv: a `pronto` job's lines, streamed."""

    @esquema.resultado_csv
    def get(self, request: Request, job_id: int) -> HttpResponseBase:
        job = self.arquivo(request, job_id)
        return resposta_de_download(
            planilha.linhas_csv(job),
            nome=planilha.nome_do_arquivo(job),
            tamanho=None,
            tipo_de_conteudo=planilha.TIPO_DE_CONTEUDO,
        )


class ArquivoOcupado(exceptions.APIException):
    """A build runs where this one would: 503 (or 429 when it is the
    tenant's own), with Retry-After (DRF writes it from `wait`)."""

    def __init__(self, ocupado: arquivos.Ocupado) -> None:
        super().__init__(detail=f"{ocupado}: tente de novo em {ocupado.espera_s} s")
        self.status_code = 429 if ocupado.do_tenant else 503
        self.wait = ocupado.espera_s


class ResultadoXlsx(_ArquivoDoResultado):
    """GET /relatorios/jobs/<id>/resultado.xlsx: the workbook, built once per
    result and streamed from where it is stored (notificacoes.arquivos)."""

    @esquema.resultado_xlsx
    def get(self, request: Request, job_id: int) -> HttpResponseBase:
        job = self.arquivo(request, job_id)
        try:
            guardado = arquivos.obter(job, na_web=True)
        except arquivos.GrandeDemais as grande:
            raise ResultadoIndisponivel(str(grande)) from None
        except arquivos.Ocupado as ocupado:
            raise ArquivoOcupado(ocupado) from None
        return resposta_de_download(
            arquivos.fatias(guardado),
            nome=guardado.nome,
            tamanho=guardado.tamanho,
            tipo_de_conteudo=guardado.tipo_de_conteudo,
        )
