"""The system check that refuses a report type missing a part of its
identity, or whose parts disagree (relatorios.E003)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from django.db.backends.utils import CursorWrapper
from django.test import override_settings
from rest_framework import serializers

from relatorios import tipos
from relatorios.models import RelatorioJob
from relatorios.models.erp import Loja
from relatorios.tipos.base import Contexto, Parcial, Parte, TipoRelatorio, dinheiro
from relatorios.tipos.colunas import LOJA, Coluna, Grafico
from relatorios.tipos.verificacao import PARTES, problemas, verificar_tipos
from tests import processos


class LinhaSerializer(serializers.Serializer):
    loja = serializers.CharField()
    receita = dinheiro()


class ResultadoSerializer(serializers.Serializer):
    linhas = LinhaSerializer(many=True)


class SoOsMetodos(TipoRelatorio):
    """What the worker calls, and no part of the identity."""

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return [{}]

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        return {}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {}


COMPLETO: dict[str, Any] = {
    "tipo": "teste_completo",
    "titulo": "Completo",
    "colunas": (LOJA, Coluna("receita", "Receita (R$)", "dinheiro")),
    "grafico": Grafico("barra", "Receita", eixo="loja", valor="receita"),
    "resultado": ResultadoSerializer,
    "exemplo": {"linhas": [{"loja": "L1", "receita": "10.00"}]},
    "tabelas_erp": (Loja,),
}


def tipo_com(**partes: Any) -> type[TipoRelatorio]:
    """A type with COMPLETO's parts, some replaced; a part given as ... is
    left out."""
    corpo = {
        nome: valor
        for nome, valor in (COMPLETO | partes).items()
        if valor is not Ellipsis
    }
    return type("TipoDeTeste", (SoOsMetodos,), corpo)


class SemGrafico(SoOsMetodos):
    """A type that forgot its chart: `manage.py qcluster` must not start."""

    tipo = "teste_sem_grafico"
    titulo = "Sem gráfico"
    colunas = COMPLETO["colunas"]
    resultado = ResultadoSerializer
    exemplo = COMPLETO["exemplo"]
    tabelas_erp = (Loja,)


def test_os_tipos_registrados_passam_na_verificacao() -> None:
    assert verificar_tipos() == []
    assert {"vendas", "comissoes", "estoque"} <= set(tipos.registro())


def test_um_tipo_completo_nao_tem_problemas() -> None:
    assert problemas(tipo_com()) == []


def test_um_grafico_none_e_declarado_a_tabela_sozinha() -> None:
    assert problemas(tipo_com(grafico=None)) == []


@pytest.mark.parametrize("parte", PARTES)
def test_um_tipo_sem_uma_parte_e_recusado(parte: str) -> None:
    assert problemas(tipo_com(**{parte: ...})) == [f"missing {parte}"]


def test_um_tipo_sem_os_metodos_do_trabalhador_e_recusado() -> None:
    abstrato = type("Abstrato", (TipoRelatorio,), dict(COMPLETO))

    assert problemas(abstrato) == ["does not implement combinar, gerar_parte, partes"]


@pytest.mark.parametrize(
    ("partes", "problema"),
    [
        ({"titulo": ""}, "titulo must be a non-empty text"),
        ({"colunas": ()}, "colunas must be a non-empty tuple of Coluna"),
        ({"colunas": [LOJA]}, "colunas must be a non-empty tuple of Coluna"),
        ({"colunas": (LOJA, "receita")}, "colunas must hold Coluna only"),
        ({"colunas": (LOJA, LOJA)}, "colunas repeat loja"),
        (
            {"colunas": (LOJA, Coluna("receita", "R", "moeda"))},  # type: ignore[arg-type]
            "column receita: unknown format 'moeda'",
        ),
        (
            {"colunas": (LOJA, Coluna("receita", "R", "dinheiro", total="media"))},  # type: ignore[arg-type]
            "column receita: unknown total 'media'",
        ),
        (
            {"colunas": (LOJA, Coluna("receita", "R", "dinheiro", largura=0))},
            "column receita: largura must be a positive int",
        ),
        ({"grafico": "barras"}, "grafico must be a Grafico or None"),
        (
            {"grafico": Grafico("barra", "R", eixo="vendedor", valor="receita")},
            "grafico.eixo 'vendedor' is not a column",
        ),
        (
            {"grafico": Grafico("barra", "R", eixo="receita", valor="loja")},
            "grafico.valor 'loja' is not a numeric column",
        ),
        (
            {"resultado": LinhaSerializer},
            "resultado must have linhas = <a Serializer>(many=True)",
        ),
        ({"resultado": dict}, "resultado must be a Serializer class"),
        (
            {"colunas": (LOJA, Coluna("receita", "R", "dinheiro"), Coluna("x", "X"))},
            "resultado's linhas lack the columns x",
        ),
        (
            {"colunas": (LOJA,), "grafico": None},
            "resultado's linhas have no column for receita",
        ),
        (
            {"exemplo": {"linhas": [{"loja": "L1", "receita": "dez"}]}},
            "exemplo is not a valid resultado: "
            "linhas.0.receita: Um número válido é necessário.",
        ),
        ({"tabelas_erp": [Loja]}, "tabelas_erp must be a tuple of models"),
        ({"tabelas_erp": ("erp_lojas",)}, "tabelas_erp: 'erp_lojas' is not a model"),
        (
            {"tabelas_erp": (RelatorioJob,)},
            "tabelas_erp: relatorio_jobs is not an ERP table (erp_*)",
        ),
        (
            {"partes_reutilizaveis": "sim"},
            "partes_reutilizaveis must be True or False",
        ),
    ],
)
def test_partes_que_nao_concordam_sao_recusadas(
    partes: dict[str, Any], problema: str
) -> None:
    assert problemas(tipo_com(**partes)) == [problema]


def test_dois_tipos_com_o_mesmo_nome_sao_recusados() -> None:
    extras = [*processos.TIPOS_DE_TESTE.split(","), "tests.tipos_de_teste.Lento"]
    with override_settings(RELATORIOS_TIPOS_EXTRAS=extras):
        mensagens = verificar_tipos()

    assert [(m.id, m.msg) for m in mensagens] == [
        ("relatorios.E003", "tipo teste_lento: tipo teste_lento has the same tipo")
    ]


def test_um_extra_que_nao_importa_e_recusado() -> None:
    with override_settings(RELATORIOS_TIPOS_EXTRAS=["tests.nao_existe.Tipo"]):
        mensagens = verificar_tipos()

    assert [m.id for m in mensagens] == ["relatorios.E003"]
    assert "RELATORIOS_TIPOS_EXTRAS" in mensagens[0].msg


@pytest.mark.django_db(transaction=True)
def test_o_cluster_nao_sobe_com_um_tipo_sem_grafico(pasta_saida: Path) -> None:
    extras = f"{processos.TIPOS_DE_TESTE},{__name__}.SemGrafico"
    processo = processos.Processo(
        [sys.executable, "manage.py", "qcluster"],
        processos.ambiente(RELATORIOS_TIPOS_EXTRAS=extras),
        pasta_saida / "qcluster.log",
    )
    try:
        codigo = processo.popen.wait(60)
    finally:
        processo.matar()  # a cluster that did start must not outlive the test

    assert codigo != 0
    log = processo.texto_do_log()
    assert "relatorios.E003" in log
    assert "tipo teste_sem_grafico: missing grafico" in log
    assert "supervisor pronto" not in log
