"""The workbook's layout as a type declares it in its columns: widths,
formats, and a Total row that sums what adds up and copies what does not."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import openpyxl
import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework import serializers

from relatorios.apresentacao import excel
from relatorios.jobs import pedidos
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from relatorios.tipos.base import dinheiro
from relatorios.tipos.colunas import LOJA, Coluna
from tests import processos
from tests.tipos_de_teste import Lento

pytestmark = pytest.mark.django_db


class LinhaDeMargensSerializer(serializers.Serializer):
    loja = serializers.CharField()
    nome = serializers.CharField()
    receita = dinheiro()
    margem = serializers.DecimalField(max_digits=8, decimal_places=4)
    variacao = serializers.DecimalField(max_digits=8, decimal_places=4)


class ResultadoDeMargensSerializer(serializers.Serializer):
    linhas = LinhaDeMargensSerializer(many=True)


class Margens(Lento):
    tipo = "teste_margens"
    titulo = "Margens"
    colunas = (
        LOJA,
        Coluna("nome", "Nome", largura=40),
        Coluna("receita", "Receita (R$)", "dinheiro"),
        Coluna("margem", "Margem", "percentual", total="valor"),
        Coluna("variacao", "Variação", "percentual", total="valor"),
    )
    resultado = ResultadoDeMargensSerializer
    exemplo = {"linhas": []}


MARGENS = {
    "linhas": [
        {"loja": "L1", "nome": "Centro", "receita": "100.00", "margem": "0.1000"},
        {"loja": "L2", "nome": "Norte", "receita": "300.00", "margem": "0.3000"},
    ],
    # A ratio of the totals, not a sum of the lines' ratios; no change from zero.
    "totais": {"receita": "400.00", "margem": "0.2500", "variacao": None},
}


@pytest.fixture(autouse=True)
def _margens() -> Any:
    extras = [*processos.TIPOS_DE_TESTE.split(","), f"{__name__}.Margens"]
    with override_settings(RELATORIOS_TIPOS_EXTRAS=extras):
        yield


def planilha(tenant: Tenant) -> Any:
    job = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="teste_margens",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-31"},
        usuario_id=None,
    ).job
    RelatorioJob.objects.filter(pk=job.id).update(
        status=EstadoDoJob.PRONTO,
        resultado=MARGENS,
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(hours=1),
    )
    arquivo = io.BytesIO()
    excel.gravar_xlsx(RelatorioJob.objects.get(pk=job.id), arquivo)
    return openpyxl.load_workbook(io.BytesIO(arquivo.getvalue())).active


def test_o_total_de_uma_razao_e_o_do_resultado_e_o_de_dinheiro_uma_soma(
    tenant: Tenant,
) -> None:
    folha = planilha(tenant)

    assert [c.value for c in folha[9]] == ["Total", None, "=SUM(C7:C8)", 0.25, None]
    assert folha["D7"].value == 0.1
    assert folha["D7"].number_format == "0.00%"
    assert folha["D9"].number_format == "0.00%"


def test_a_largura_declarada_na_coluna_vale_na_planilha(tenant: Tenant) -> None:
    folha = planilha(tenant)

    assert folha.column_dimensions["B"].width == pytest.approx(40, abs=1)
    assert folha.column_dimensions["A"].width == pytest.approx(12, abs=1)
