"""Schedules and alerts over the API: a thin layer over `agendamentos` and `alertas`.

Tenant-scoped like the jobs: the lookup is by id and the caller's tenant in
one query, so another tenant's schedule is a 404, never a 403.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from relatorios.agendamentos import agenda
from relatorios.api import esquema
from relatorios.api.permissoes import tenant_do_pedido
from relatorios.api.serializers import SerializerDeSaida
from relatorios.jobs.consultas import ID_MAXIMO
from relatorios.models import Agendamento, Alerta, Ocorrencia
from relatorios.tipos.normalizacao import ErroDeParametro, objeto_com

CAMPOS_DE_CRIACAO = (
    "nome",
    "tipo",
    "periodo",
    "cron",
    "prazo_minutos",
    "agrupar",
    "lojas",
    "destinatarios",
    "entrega",
    "webhooks",
    "pular",
    "recuperacao",
)


class OcorrenciaSerializer(SerializerDeSaida):
    id = serializers.IntegerField()
    planejado_para = serializers.DateTimeField()
    prazo_em = serializers.DateTimeField()
    estado = serializers.CharField()
    motivo = serializers.CharField()
    params = serializers.JSONField()
    job_id = serializers.IntegerField(allow_null=True)
    entregue_em = serializers.DateTimeField(allow_null=True)
    pulada_por = serializers.CharField(allow_null=True)


class AgendamentoSerializer(SerializerDeSaida):
    id = serializers.IntegerField()
    nome = serializers.CharField()
    tipo = serializers.CharField()
    periodo = serializers.CharField()
    cron = serializers.CharField()
    descricao = serializers.CharField()
    prazo_minutos = serializers.SerializerMethodField()
    agrupar = serializers.CharField()
    lojas = serializers.JSONField()
    destinatarios = serializers.JSONField()
    entrega = serializers.CharField()
    webhooks = serializers.JSONField()
    pular = serializers.CharField()
    recuperacao = serializers.CharField()
    ativo = serializers.BooleanField()
    proximo_disparo = serializers.DateTimeField(allow_null=True)
    criado_em = serializers.DateTimeField()

    def get_prazo_minutos(self, agendamento: Agendamento) -> int:
        return int(agendamento.prazo.total_seconds() // 60)


class AlertaSerializer(SerializerDeSaida):
    id = serializers.IntegerField()
    agendamento_id = serializers.IntegerField(source="ocorrencia.agendamento_id")
    ocorrencia_id = serializers.IntegerField()
    planejado_para = serializers.DateTimeField(source="ocorrencia.planejado_para")
    prazo_em = serializers.DateTimeField(source="ocorrencia.prazo_em")
    job_id = serializers.IntegerField(source="ocorrencia.job_id", allow_null=True)
    motivo = serializers.CharField()
    aberto_em = serializers.DateTimeField()
    fechado_em = serializers.DateTimeField(allow_null=True)
    nota = serializers.CharField()


_INSTANTE = serializers.DateTimeField()


def _do_tenant(request: Request) -> QuerySet[Agendamento]:
    return Agendamento.objects.filter(
        tenant_id=tenant_do_pedido(request), excluido_em__isnull=True
    )


def _agendamento(request: Request, agendamento_id: int) -> Agendamento:
    if not 0 < agendamento_id <= ID_MAXIMO:
        raise Http404
    agendamento = (
        _do_tenant(request).select_related("tenant").filter(pk=agendamento_id).first()
    )
    if agendamento is None:
        raise Http404
    return agendamento


def _detalhe(agendamento: Agendamento) -> dict[str, Any]:
    corpo = dict(AgendamentoSerializer(agendamento).data)
    # The same format as every other timestamp in the body (DRF's, with "Z").
    corpo["proximos_disparos"] = [
        _INSTANTE.to_representation(d) for d in agenda.proximos_disparos(agendamento, 3)
    ]
    recentes = Ocorrencia.objects.filter(agendamento=agendamento).order_by(
        "-planejado_para"
    )[:10]
    corpo["ocorrencias"] = OcorrenciaSerializer(recentes, many=True).data
    return corpo


def local(agendamento_id: int) -> str:
    return f"/relatorios/agendamentos/{agendamento_id}"


class Agendamentos(APIView):
    """GET: the tenant's schedules. POST: create one (201)."""

    @esquema.listar_agendamentos
    def get(self, request: Request) -> Response:
        # `descricao` reads the tenant's zone: one join, not a query per row.
        lista = _do_tenant(request).select_related("tenant").order_by("id")
        return Response({"agendamentos": AgendamentoSerializer(lista, many=True).data})

    @esquema.criar_agendamento
    def post(self, request: Request) -> Response:
        corpo = objeto_com(request.data, CAMPOS_DE_CRIACAO)
        for obrigatorio in ("tipo", "periodo", "cron", "prazo_minutos"):
            if corpo.get(obrigatorio) is None:
                raise ErroDeParametro(obrigatorio, "campo obrigatório")
        tipo = corpo["tipo"]
        if not isinstance(tipo, str):
            raise ErroDeParametro("tipo", "deve ser um texto")
        agendamento = agenda.criar(
            tenant_id=tenant_do_pedido(request),
            tipo=tipo,
            periodo=corpo["periodo"],
            cron=corpo["cron"],
            prazo=corpo["prazo_minutos"],
            agrupar=corpo.get("agrupar"),
            lojas=corpo.get("lojas"),
            destinatarios=corpo.get("destinatarios"),
            entrega=corpo.get("entrega"),
            webhooks=corpo.get("webhooks"),
            pular=corpo.get("pular"),
            recuperacao=corpo.get("recuperacao"),
            nome=corpo.get("nome", ""),
            usuario_id=request.user.pk,
        )
        agendamento = Agendamento.objects.select_related("tenant").get(
            pk=agendamento.pk
        )
        return Response(
            _detalhe(agendamento),
            status=status.HTTP_201_CREATED,
            headers={"Location": local(agendamento.pk)},
        )


CAMPOS_DA_ENTREGA = ("destinatarios", "entrega", "webhooks", "pular")


class DetalheDoAgendamento(APIView):
    """GET: one schedule with its next firings and latest occurrences. PATCH:
    who gets its reports and how. DELETE."""

    @esquema.ver_agendamento
    def get(self, request: Request, agendamento_id: int) -> Response:
        return Response(_detalhe(_agendamento(request, agendamento_id)))

    @esquema.alterar_entrega_do_agendamento
    def patch(self, request: Request, agendamento_id: int) -> Response:
        agendamento = _agendamento(request, agendamento_id)
        corpo = objeto_com(request.data, CAMPOS_DA_ENTREGA)
        for campo in CAMPOS_DA_ENTREGA:
            if campo in corpo and corpo[campo] is None:
                raise ErroDeParametro(campo, "não pode ser nulo")
        alterado = agenda.alterar_entrega(
            agendamento_id=agendamento.pk, tenant_id=agendamento.tenant_id, **corpo
        )
        if alterado is None:
            raise Http404
        return Response(_detalhe(_agendamento(request, agendamento_id)))

    @esquema.excluir_agendamento
    def delete(self, request: Request, agendamento_id: int) -> Response:
        agendamento = _agendamento(request, agendamento_id)
        agenda.excluir(agendamento_id=agendamento.pk, tenant_id=agendamento.tenant_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PausarAgendamento(APIView):
    """POST: stop firing (idempotent: an already paused schedule stays paused)."""

    @esquema.pausar_agendamento
    def post(self, request: Request, agendamento_id: int) -> Response:
        agendamento = _agendamento(request, agendamento_id)
        agenda.pausar(agendamento_id=agendamento.pk, tenant_id=agendamento.tenant_id)
        return Response(_detalhe(_agendamento(request, agendamento_id)))


class RetomarAgendamento(APIView):
    """POST: fire again from now on (idempotent)."""

    @esquema.retomar_agendamento
    def post(self, request: Request, agendamento_id: int) -> Response:
        agendamento = _agendamento(request, agendamento_id)
        agenda.retomar(agendamento_id=agendamento.pk, tenant_id=agendamento.tenant_id)
        return Response(_detalhe(_agendamento(request, agendamento_id)))


class Alertas(APIView):
    """GET: the tenant's alerts, newest first; `?situacao=abertos|fechados`."""

    @esquema.listar_alertas
    def get(self, request: Request) -> Response:
        lista = Alerta.objects.filter(tenant_id=tenant_do_pedido(request))
        situacao = request.query_params.get("situacao")
        if situacao == "abertos":
            lista = lista.filter(fechado_em__isnull=True)
        elif situacao == "fechados":
            lista = lista.filter(fechado_em__isnull=False)
        elif situacao is not None:
            raise ErroDeParametro("situacao", "deve ser 'abertos' ou 'fechados'")
        lista = lista.select_related("ocorrencia").order_by("-aberto_em")[:200]
        return Response({"alertas": AlertaSerializer(lista, many=True).data})
