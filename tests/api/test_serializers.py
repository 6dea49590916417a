from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import override_settings
from rest_framework import serializers

from relatorios.api import serializers as saida
from relatorios.api.agendamentos import AlertaSerializer
from relatorios.api.serializers import SerializerDeSaida

JOB = SimpleNamespace(
    id=7,
    status="pronto",
    progresso=100,
    criado_em=datetime(2026, 1, 5, 12, 30, 1, 123456, tzinfo=UTC),
    resultado={"linhas": [{"receita": "10.50"}], "totais": {"vendas": 3}},
    concluido_em=datetime(2026, 1, 5, 12, 31, tzinfo=UTC),
    expira_em=None,
    erro="OperationalError: timeout",
    tentativas=2,
    proxima_tentativa_em=datetime(2026, 1, 5, 12, 32, tzinfo=UTC),
)


# The shapes as DRF serializers (the bodies were built by these until issue
# 27): each dict builder must answer what DRF's own serializer answers.
class Aceito(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    progresso = serializers.IntegerField()
    criado_em = serializers.DateTimeField()


class EmAndamento(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    progresso = serializers.IntegerField()
    tentativas = serializers.IntegerField()
    proxima_tentativa_em = serializers.DateTimeField(allow_null=True)


class Pronto(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    resultado = serializers.JSONField()
    concluido_em = serializers.DateTimeField()
    expira_em = serializers.DateTimeField()
    url = serializers.CharField()


class Falhou(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    erro = serializers.CharField()


CASOS = [
    (saida.corpo_aceito, Aceito),
    (saida.corpo_em_andamento, EmAndamento),
    (saida.corpo_pronto, Pronto),
    (saida.corpo_falhou, Falhou),
]


def _jobs() -> list[Any]:
    fuso = timezone(timedelta(hours=-3))
    return [
        SimpleNamespace(**vars(JOB), url="/relatorios/jobs/7/resultado.csv"),
        SimpleNamespace(
            **{
                **vars(JOB),
                "resultado": {"v": Decimal("1.10")},
                "criado_em": datetime(2026, 3, 1, 0, 0, tzinfo=fuso),
                "proxima_tentativa_em": None,
                "concluido_em": datetime(2026, 3, 1, 9, 0, 0, 1, tzinfo=fuso),
                "expira_em": datetime(2026, 3, 2, tzinfo=UTC),
                "erro": "",
                "tentativas": 0,
            },
            url="/relatorios/jobs/7/resultado.csv",
        ),
    ]


@pytest.mark.parametrize(("montar", "classe"), CASOS)
def test_corpo_igual_ao_do_serializer_do_drf(
    montar: Any, classe: type[serializers.Serializer]
) -> None:
    for job in _jobs():
        assert montar(job) == classe(job).data
        assert list(montar(job)) == list(classe(job).data)


@override_settings(TIME_ZONE="America/Sao_Paulo")
def test_datas_no_fuso_atual_como_o_drf() -> None:
    for job in _jobs():
        assert saida.corpo_aceito(job) == Aceito(job).data
        assert saida.corpo_em_andamento(job) == EmAndamento(job).data


def comum(classe: type[SerializerDeSaida]) -> type[serializers.Serializer]:
    """The same declared fields (and their get_* methods) on DRF's plain
    Serializer, which binds a copy of every field per instance."""
    metodos = {n: getattr(classe, n) for n in dir(classe) if n.startswith("get_")}
    return type(  # type: ignore[return-value]
        "Comum" + classe.__name__,
        (serializers.Serializer,),
        {**metodos, **dict(classe._declared_fields.items())},
    )


def test_serializer_de_saida_igual_ao_comum_e_ligado_uma_vez() -> None:
    alerta = SimpleNamespace(
        id=3,
        ocorrencia=SimpleNamespace(
            agendamento_id=4,
            planejado_para=datetime(2026, 1, 5, 12, 30, tzinfo=UTC),
            prazo_em=datetime(2026, 1, 5, 13, 30, tzinfo=UTC),
            job_id=None,
        ),
        ocorrencia_id=5,
        motivo="atraso",
        aberto_em=datetime(2026, 1, 5, 13, 31, tzinfo=UTC),
        fechado_em=None,
        nota="",
    )
    primeiro: Any = AlertaSerializer(alerta)
    segundo: Any = AlertaSerializer(alerta)
    assert primeiro.data == comum(AlertaSerializer)(alerta).data
    assert primeiro.data == segundo.data
    assert AlertaSerializer.campos_ligados() is AlertaSerializer.campos_ligados()
