from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework import serializers

from relatorios.api.serializers import (
    JobAceitoSerializer,
    JobEmAndamentoSerializer,
    JobFalhouSerializer,
    JobProntoSerializer,
    SerializerDeSaida,
)

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


def comum(classe: type[SerializerDeSaida]) -> type[serializers.Serializer]:
    """The same declared fields (and their get_* methods) on DRF's plain
    Serializer, which binds a copy of every field per instance."""
    metodos = {n: getattr(classe, n) for n in dir(classe) if n.startswith("get_")}
    return type(  # type: ignore[return-value]
        "Comum" + classe.__name__,
        (serializers.Serializer,),
        {**metodos, **dict(classe._declared_fields.items())},
    )


@pytest.mark.parametrize(
    "classe",
    [
        JobAceitoSerializer,
        JobEmAndamentoSerializer,
        JobProntoSerializer,
        JobFalhouSerializer,
    ],
)
def test_saida_igual_a_do_serializer_comum(classe: type[SerializerDeSaida]) -> None:
    assert classe(JOB).data == comum(classe)(JOB).data


def test_campos_ligados_uma_vez_por_classe() -> None:
    primeiro: Any = JobProntoSerializer(JOB)
    segundo: Any = JobProntoSerializer(JOB)
    assert primeiro.data == segundo.data
    assert primeiro._readable_fields is segundo._readable_fields
    assert JobProntoSerializer._campos() is not JobAceitoSerializer._campos()


def test_dinheiro_e_none_como_o_drf() -> None:
    job = SimpleNamespace(**{**vars(JOB), "resultado": {"v": Decimal("1.10")}})
    assert JobProntoSerializer(job).data["expira_em"] is None
    assert JobProntoSerializer(job).data == comum(JobProntoSerializer)(job).data
