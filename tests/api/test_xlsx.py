"""GET /relatorios/jobs/<id>/resultado.xlsx, read back with openpyxl."""

from __future__ import annotations

import io
import urllib.request
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import openpyxl
import pytest
from django.test import Client
from openpyxl.worksheet.worksheet import Worksheet

from relatorios.jobs import pedidos
from relatorios.models import RelatorioJob, Tenant
from tests import helpers
from tests.api.test_csv import LINHAS, job_pronto

pytestmark = pytest.mark.django_db

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

VENDAS = {
    "agrupar": "mes",
    "linhas": LINHAS,
    "totais": {"vendas": 1205, "quantidade": 3393, "receita": "123446.28"},
}
COMISSOES = {
    "agrupar": "dia",
    "linhas": [
        {
            "periodo": "2026-01-05",
            "vendedor_id": 3,
            "vendedor": "Ana",
            "taxa": "0.0350",
            "receita": "1000.00",
            "comissao": "35.00",
        },
        {
            "periodo": "2026-01-06",
            "vendedor_id": 4,
            "vendedor": "@Bruno",
            "taxa": "0.0300",
            "receita": "500.10",
            "comissao": "15.00",
        },
    ],
    "totais": {"receita": "1500.10", "comissao": "50.00"},
}


def baixar(cliente: Client, job_id: int) -> Any:
    return cliente.get(f"/relatorios/jobs/{job_id}/resultado.xlsx")


def abrir(corpo: bytes, *, valores: bool = False) -> Worksheet:
    # data_only: the cached values of formulas instead of the formulas.
    livro = openpyxl.load_workbook(io.BytesIO(corpo), data_only=valores)
    return livro.active


def corpo_de(resposta: Any) -> bytes:
    return b"".join(resposta.streaming_content)


def test_numeros_datas_dinheiro_texto_e_totais_em_formula(tenant: Tenant) -> None:
    _, token = helpers.criar_usuario(tenant)
    job_id = job_pronto(tenant, resultado=VENDAS)

    resposta = baixar(helpers.cliente_com_token(token), job_id)
    corpo = corpo_de(resposta)
    folha = abrir(corpo)
    cacheada = abrir(corpo, valores=True)
    linhas = list(folha.iter_rows(values_only=True))

    assert resposta.status_code == 200
    assert resposta["Content-Type"] == XLSX
    assert resposta["Content-Disposition"] == (
        f'attachment; filename="vendas_2026-01-01_2026-01-31_job{job_id}.xlsx"'
    )
    assert resposta["Cache-Control"] == "private, no-store"
    assert folha.title == "Vendas por período e loja"
    assert linhas[5] == (
        "Período",
        "Loja",
        "Nome da loja",
        "Vendas",
        "Quantidade",
        "Receita (R$)",
    )
    assert folha.freeze_panes == "A7"
    assert folha.auto_filter.ref == "A6:F8"
    # Each line's cells are the JSON's values, typed.
    for numero, esperado in enumerate(LINHAS, start=7):
        periodo, loja, nome, vendas, quantidade, receita = (
            folha.cell(numero, c) for c in range(1, 7)
        )
        assert periodo.value == datetime(2026, 1, 1)
        assert periodo.number_format == "mm/yyyy"
        assert (loja.value, nome.value) == (esperado["loja"], esperado["loja_nome"])
        assert (nome.data_type, vendas.data_type, receita.data_type) == ("s", "n", "n")
        assert (vendas.value, quantidade.value) == (
            esperado["vendas"],
            esperado["quantidade"],
        )
        assert Decimal(str(receita.value)) == Decimal(esperado["receita"])
        assert "R$" in receita.number_format
    # The totals row is a formula over the lines, cached as the result's totals.
    assert linhas[8][0] == "Total"
    assert linhas[8][3:] == ("=SUM(D7:D8)", "=SUM(E7:E8)", "=SUM(F7:F8)")
    assert [c.value for c in cacheada[9]][3:5] == [1205, 3393]
    assert Decimal(str(cacheada["F9"].value)) == Decimal("123446.28")
    assert folha.column_dimensions["C"].width >= 20


def test_dia_taxa_e_um_nome_que_parece_formula_ficam_o_que_sao(
    tenant: Tenant,
) -> None:
    _, token = helpers.criar_usuario(tenant)
    job_id = job_pronto(tenant, tipo="comissoes", resultado=COMISSOES)

    folha = abrir(corpo_de(baixar(helpers.cliente_com_token(token), job_id)))

    assert folha["A7"].value == datetime(2026, 1, 5)
    assert folha["A7"].number_format == "dd/mm/yyyy"
    assert folha["D7"].value == pytest.approx(0.035)
    assert "R$" not in folha["D7"].number_format
    assert (folha["C8"].value, folha["C8"].data_type) == ("@Bruno", "s")
    assert folha["E9"].value == "=SUM(E7:E8)"
    assert folha["F9"].value == "=SUM(F7:F8)"
    assert "R$" in folha["F7"].number_format


def test_sem_linhas_o_total_e_o_numero_do_resultado(tenant: Tenant) -> None:
    _, token = helpers.criar_usuario(tenant)
    vazio = {"agrupar": "mes", "linhas": [], "totais": {"vendas": 0, "receita": "0"}}
    job_id = job_pronto(tenant, resultado=vazio)

    linhas = list(
        abrir(corpo_de(baixar(helpers.cliente_com_token(token), job_id))).iter_rows(
            values_only=True
        )
    )

    assert len(linhas) == 7
    assert linhas[6][0] == "Total"
    assert linhas[6][3] == 0


def test_pendente_e_409_e_de_outro_tenant_e_404(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    _, token = helpers.criar_usuario(tenant)
    _, do_outro = helpers.criar_usuario(outro_tenant)
    job_id = job_pronto(tenant, resultado=VENDAS)
    pendente = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-03-01", "fim": "2026-03-31"},
        usuario_id=None,
    ).job.id

    ainda = baixar(helpers.cliente_com_token(token), pendente)
    alheio = baixar(helpers.cliente_com_token(do_outro), job_id)
    sem_token = baixar(Client(), job_id)

    assert (ainda.status_code, ainda.json()) == (
        409,
        {"erro": "o relatório não está pronto (status: pendente)"},
    )
    assert (alheio.status_code, alheio.json()) == (404, {"erro": "não encontrado"})
    assert sem_token.status_code == 401


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_pelo_servidor_real_o_arquivo_abre(tenant: Tenant, servidor: str) -> None:
    _, token = helpers.criar_usuario(tenant)
    job_id = job_pronto(tenant, resultado=VENDAS)
    pedido = urllib.request.Request(
        f"{servidor}/relatorios/jobs/{job_id}/resultado.xlsx",
        headers={"Authorization": f"Token {token}"},
    )

    with urllib.request.urlopen(pedido, timeout=60) as resposta:
        corpo = resposta.read()
        cabecalhos = resposta.headers

    assert cabecalhos["Content-Type"] == XLSX
    assert int(cabecalhos["Content-Length"]) == len(corpo)
    assert abrir(corpo)["D9"].value == "=SUM(D7:D8)"


def test_bloco_de_cabecalho_diz_relatorio_periodo_lojas_e_quando_no_fuso_do_tenant(
    tenant: Tenant,
) -> None:
    _, token = helpers.criar_usuario(tenant)
    job_id = job_pronto(tenant, resultado=VENDAS)
    RelatorioJob.objects.filter(pk=job_id).update(
        concluido_em=datetime(2026, 2, 1, 2, 30, tzinfo=UTC)
    )

    folha = abrir(corpo_de(baixar(helpers.cliente_com_token(token), job_id)))
    bloco = [[c.value for c in linha][:2] for linha in folha.iter_rows(max_row=5)]

    assert bloco == [
        ["Vendas por período e loja", None],
        ["Período", "janeiro de 2026"],
        ["Lojas", "todas as lojas"],
        # 02:30 UTC is 23:30 of the day before in São Paulo (UTC-3).
        ["Gerado em", "31/01/2026 23:30 (America/Sao_Paulo)"],
        [None, None],
    ]
    # The filter covers the header and the lines, not the Total row.
    assert folha.auto_filter.ref == "A6:F8"
    assert folha["A9"].value == "Total"
