"""The monthly close against an independent computation: plain Python over
the rows the test itself created (never the report's SQL)."""

from __future__ import annotations

import io
import random
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.db import connection

from relatorios import tipos
from relatorios.models import Loja, Tenant, Venda
from relatorios.models.erp import Devolucao
from relatorios.tipos.fechamento import ResultadoFechamentoSerializer
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers
from tests.tipos.test_tipos import rodar

pytestmark = pytest.mark.django_db

FUSO = ZoneInfo("America/Sao_Paulo")
JANEIRO = {"inicio": "2026-01-01", "fim": "2026-01-31"}
CENTAVO, DEZ_MILESIMOS = Decimal("0.01"), Decimal("0.0001")
FIGURAS = ("receita", "devolucoes", "comissoes", "estoque_final")


def devolver(venda: Venda, loja: Loja, data_hora: datetime, valor: str) -> Devolucao:
    return Devolucao.objects.create(
        tenant=loja.tenant,
        loja=loja,
        venda=venda,
        data_hora=data_hora,
        quantidade=1,
        valor=Decimal(valor),
    )


@pytest.fixture
def rede(tenant: Tenant, outro_tenant: Tenant) -> dict[str, Any]:
    """Three stores (L3 with nothing at all), four sellers each of one store,
    December 2025 to February 2026 of sales, returns (some to another store
    than the sale's) and stock movements over an opening balance; sales and
    returns near midnight, where UTC and São Paulo disagree on the month; and
    another tenant with the same store codes, never to be seen."""
    rnd = random.Random(11)
    lojas = helpers.criar_lojas(tenant, "L1", "L2", "L3")
    vendedores = [
        (lojas[0], helpers.criar_vendedor(tenant, "0.0200")),
        (lojas[0], helpers.criar_vendedor(tenant, "0.0350")),
        (lojas[1], helpers.criar_vendedor(tenant, "0.0500")),
        (lojas[1], helpers.criar_vendedor(tenant, "0.0300")),
    ]
    produtos = [helpers.criar_produto(tenant, p) for p in ("10.00", "25.50", "3.99")]
    inicio = datetime(2025, 12, 1, 3, tzinfo=UTC)  # midnight in São Paulo
    vendas = []
    for _ in range(300):
        loja, vendedor = rnd.choice(vendedores)
        vendas.append(
            helpers.criar_venda(
                loja=loja,
                vendedor=vendedor,
                produto=rnd.choice(produtos),
                data_hora=inicio + timedelta(minutes=rnd.randrange(0, 90 * 24 * 60)),
                valor=str(Decimal(rnd.randint(100, 99999)) / 100),
            )
        )
    # 2026-01-01 02:30 UTC is still December in São Paulo; 02-01 02:00, January.
    for momento in (datetime(2026, 1, 1, 2, 30), datetime(2026, 2, 1, 2)):
        vendas.append(
            helpers.criar_venda(
                loja=lojas[0],
                vendedor=vendedores[0][1],
                produto=produtos[0],
                data_hora=momento.replace(tzinfo=UTC),
                valor="1000.00",
            )
        )
    devolucoes = [
        devolver(
            venda,
            rnd.choice(lojas[:2]),
            venda.data_hora + timedelta(hours=rnd.randrange(1, 24 * 20)),
            str((venda.valor / 2).quantize(CENTAVO)),
        )
        for venda in rnd.sample(vendas, 60)
    ]
    devolucoes.append(
        devolver(vendas[0], lojas[1], datetime(2026, 2, 1, 2, 59, tzinfo=UTC), "77.70")
    )
    movimentos = [
        helpers.criar_movimento(
            loja=loja, produto=produto, data=date(2025, 11, 30), quantidade=100
        )
        for loja in lojas[:2]
        for produto in produtos
    ]
    for _ in range(200):
        movimentos.append(
            helpers.criar_movimento(
                loja=rnd.choice(lojas[:2]),
                produto=rnd.choice(produtos),
                data=date(2025, 12, 1) + timedelta(days=rnd.randrange(0, 90)),
                quantidade=rnd.choice([-1, -2, -5, 10, 30]),
            )
        )
    alheia = helpers.criar_lojas(outro_tenant, "L1")[0]
    venda_alheia = helpers.criar_venda(
        loja=alheia,
        vendedor=helpers.criar_vendedor(outro_tenant),
        produto=helpers.criar_produto(outro_tenant),
        data_hora=datetime(2026, 1, 10, 15, tzinfo=UTC),
        valor="777.77",
    )
    devolver(venda_alheia, alheia, datetime(2026, 1, 11, 15, tzinfo=UTC), "7.77")
    helpers.criar_movimento(
        loja=alheia, produto=venda_alheia.produto, data=date(2026, 1, 2), quantidade=9
    )
    return {"vendas": vendas, "devolucoes": devolucoes, "movimentos": movimentos}


def mes_local(momento: datetime) -> str:
    return momento.astimezone(FUSO).strftime("%Y-%m")


def figuras(rede: dict[str, Any], mes: str, ultimo_dia: date) -> dict[str, Any]:
    """{loja: {figura: Decimal}} of one month, by plain Python."""
    por_loja: dict[str, dict[str, Decimal]] = defaultdict(
        lambda: dict.fromkeys(FIGURAS, Decimal("0.00"))
    )
    por_vendedor: dict[tuple[str, int], Decimal] = defaultdict(Decimal)
    taxas = {}
    for venda in rede["vendas"]:
        if mes_local(venda.data_hora) == mes:
            por_loja[venda.loja.codigo]["receita"] += venda.valor
            por_vendedor[(venda.loja.codigo, venda.vendedor_id)] += venda.valor
            taxas[venda.vendedor_id] = venda.vendedor.taxa_comissao
    for (loja, vendedor), receita in por_vendedor.items():
        comissao = (receita * taxas[vendedor]).quantize(CENTAVO, ROUND_HALF_UP)
        por_loja[loja]["comissoes"] += comissao
    for devolucao in rede["devolucoes"]:
        if mes_local(devolucao.data_hora) == mes:
            por_loja[devolucao.loja.codigo]["devolucoes"] += devolucao.valor
    for movimento in rede["movimentos"]:
        if movimento.data <= ultimo_dia:
            valor = movimento.quantidade * movimento.produto.preco
            por_loja[movimento.loja.codigo]["estoque_final"] += valor
    return por_loja


def mudanca(atual: Decimal, anterior: Decimal) -> str | None:
    if anterior == 0:
        return None
    return str(((atual - anterior) / anterior).quantize(DEZ_MILESIMOS, ROUND_HALF_UP))


def linha(atual: dict[str, Decimal], anterior: dict[str, Decimal]) -> dict[str, Any]:
    campos: dict[str, Any] = {}
    for figura in FIGURAS:
        campos[figura] = str(atual[figura])
        campos[f"variacao_{figura}"] = mudanca(atual[figura], anterior[figura])
    return campos


@pytest.mark.parametrize("lojas", [[], ["L1", "L3"]])
def test_fechamento_confere_com_a_conta_independente(
    tenant: Tenant, rede: dict[str, Any], lojas: list[str]
) -> None:
    janeiro = figuras(rede, "2026-01", date(2026, 1, 31))
    dezembro = figuras(rede, "2025-12", date(2025, 12, 31))
    codigos = lojas or ["L1", "L2", "L3"]
    total_jan = {f: sum(janeiro[c][f] for c in codigos) for f in FIGURAS}
    total_dez = {f: sum(dezembro[c][f] for c in codigos) for f in FIGURAS}

    resultado = rodar(tenant, "fechamento", JANEIRO | {"lojas": lojas})

    assert resultado == {
        "mes": "2026-01",
        "mes_anterior": "2025-12",
        "linhas": [
            {"loja": c, "loja_nome": f"Loja {c}", **linha(janeiro[c], dezembro[c])}
            for c in codigos
        ],
        "totais": linha(total_jan, total_dez),
    }
    assert ResultadoFechamentoSerializer(data=resultado).is_valid()


def test_loja_sem_movimento_fecha_em_zero_e_sem_variacao(
    tenant: Tenant, rede: dict[str, Any]
) -> None:
    resultado = rodar(tenant, "fechamento", JANEIRO | {"lojas": ["L3"]})

    assert resultado["linhas"] == [
        {
            "loja": "L3",
            "loja_nome": "Loja L3",
            "receita": "0.00",
            "variacao_receita": None,
            "devolucoes": "0.00",
            "variacao_devolucoes": None,
            "comissoes": "0.00",
            "variacao_comissoes": None,
            "estoque_final": "0.00",
            "variacao_estoque_final": None,
        }
    ]


def test_as_comissoes_do_fechamento_somam_as_do_relatorio_de_comissoes(
    tenant: Tenant, rede: dict[str, Any]
) -> None:
    # Each seller sells in one store: rounding per seller and store is
    # rounding per seller.
    fechamento = rodar(tenant, "fechamento", JANEIRO)
    comissoes = rodar(tenant, "comissoes", JANEIRO | {"agrupar": "mes"})
    vendas = rodar(tenant, "vendas", JANEIRO | {"agrupar": "mes"})

    assert fechamento["totais"]["comissoes"] == comissoes["totais"]["comissao"]
    assert fechamento["totais"]["receita"] == vendas["totais"]["receita"]


def test_comissao_de_quem_vende_em_duas_lojas_e_arredondada_em_cada_uma(
    tenant: Tenant,
) -> None:
    lojas = helpers.criar_lojas(tenant, "L1", "L2")
    vendedor = helpers.criar_vendedor(tenant, "0.0350")
    for loja in lojas:
        helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=helpers.criar_produto(tenant),
            data_hora=datetime(2026, 1, 10, 15, tzinfo=UTC),
            valor="10.10",
        )

    fechamento = rodar(tenant, "fechamento", JANEIRO)
    comissoes = rodar(tenant, "comissoes", JANEIRO | {"agrupar": "mes"})

    # 10.10 x 0.035 = 0.3535 in each store; 20.20 x 0.035 = 0.707 for the seller.
    assert [li["comissoes"] for li in fechamento["linhas"]] == ["0.35", "0.35"]
    assert fechamento["totais"]["comissoes"] == "0.70"
    assert comissoes["totais"]["comissao"] == "0.71"


@pytest.mark.parametrize(
    ("brutos", "esperado"),
    [
        ({"inicio": "2026-01-01", "fim": "2026-01-31"}, ("2026-01-01", "2026-01-31")),
        ({"inicio": "2024-02-01", "fim": "2024-02-29"}, ("2024-02-01", "2024-02-29")),
        (
            {"inicio": "2026-12-01", "fim": "2026-12-31", "agrupar": "mes"},
            ("2026-12-01", "2026-12-31"),
        ),
    ],
)
def test_o_pedido_de_um_mes_inteiro_e_normalizado(
    brutos: dict[str, Any], esperado: tuple[str, str]
) -> None:
    params = tipos.obter("fechamento").normalizar(brutos)

    assert params == {"inicio": esperado[0], "fim": esperado[1], "lojas": []}


@pytest.mark.parametrize(
    ("brutos", "campo", "trecho"),
    [
        ({"inicio": "2026-01-02", "fim": "2026-01-31"}, "inicio", "comece no dia 1º"),
        ({"inicio": "2026-01-01", "fim": "2026-01-30"}, "fim", "termine em 31/01/2026"),
        ({"inicio": "2026-01-01", "fim": "2026-02-28"}, "fim", "termine em 31/01/2026"),
        ({"inicio": "2025-02-01", "fim": "2025-02-29"}, "fim", "data inválida"),
        ({"inicio": "2026-01-01"}, "fim", "obrigatório"),
    ],
)
def test_um_periodo_que_nao_e_um_mes_inteiro_e_recusado_no_campo(
    brutos: dict[str, Any], campo: str, trecho: str
) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        tipos.obter("fechamento").normalizar(brutos)

    assert erro.value.campo == campo
    assert trecho in erro.value.mensagem
    # Words beside the field, never the parameter's internal name.
    assert "inicio" not in erro.value.mensagem


def test_a_api_recusa_meio_mes_com_400_no_campo(tenant: Tenant) -> None:
    cliente = helpers.cliente_com_token(helpers.criar_usuario(tenant)[1])

    resposta = cliente.post(
        "/relatorios/fechamento",
        {"inicio": "2026-01-01", "fim": "2026-01-15"},
        content_type="application/json",
    )

    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "fim"
    assert "31/01/2026" in resposta.json()["erro"]


def devolucoes_geradas(tenant: Tenant) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT l.codigo, v.data_hora, d.data_hora, d.quantidade, v.quantidade,
                   d.valor, v.valor
              FROM erp_devolucoes d
              JOIN erp_vendas v ON v.id = d.venda_id
              JOIN erp_lojas l ON l.id = d.loja_id
             WHERE d.tenant_id = %s
             ORDER BY v.data_hora, d.data_hora, d.valor
            """,
            [tenant.pk],
        )
        return cursor.fetchall()


def test_gerar_dados_devolve_parte_das_vendas_com_a_semente(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    opcoes = {"lojas": 3, "vendas": 4000, "movimentos": 100, "seed": 5}
    for alvo in (tenant, tenant, outro_tenant):
        call_command("gerar_dados", tenant=alvo.pk, stdout=io.StringIO(), **opcoes)
    geradas = devolucoes_geradas(tenant)

    assert 60 <= len(geradas) <= 180  # about 3% of 4,000, once (not twice)
    assert geradas == devolucoes_geradas(outro_tenant)
    for _, vendida, devolvida, quantidade, vendidas, valor, da_venda in geradas:
        assert timedelta(days=1) <= devolvida - vendida < timedelta(days=21)
        assert 1 <= quantidade <= vendidas
        assert valor == (da_venda * quantidade / vendidas).quantize(
            CENTAVO, ROUND_HALF_UP
        )
