"""Each report against an independent computation: plain Python over the rows
the test itself created (never the report's SQL)."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from relatorios import tipos
from relatorios.jobs import execucao
from relatorios.models import Tenant
from relatorios.tipos.base import Contexto
from tests import helpers

pytestmark = pytest.mark.django_db

FUSO = "America/Sao_Paulo"
UTC = ZoneInfo("UTC")
CENTAVO = Decimal("0.01")


def rodar(tenant: Tenant, tipo: str, brutos: dict[str, Any]) -> dict[str, Any]:
    relatorio = tipos.obter(tipo)
    params = relatorio.normalizar(brutos)
    ctx = Contexto(job_id=0, tenant_id=tenant.pk, fuso_horario=tenant.fuso_horario)
    return execucao.calcular(relatorio, ctx, params, timeout_s=60)


@pytest.fixture
def rede(tenant: Tenant, outro_tenant: Tenant) -> dict[str, Any]:
    """Three stores, three sellers, 400 sales around February 2026 (with sales
    near midnight, where UTC and São Paulo disagree on the day), and the same
    store codes in another tenant, whose sales must never show up."""
    rnd = random.Random(7)
    lojas = helpers.criar_lojas(tenant, "L1", "L2", "L3")
    vendedores = [
        helpers.criar_vendedor(tenant, t) for t in ("0.0200", "0.0350", "0.0500")
    ]
    produtos = [helpers.criar_produto(tenant) for _ in range(4)]
    vendas = []
    inicio = datetime(2026, 1, 25, tzinfo=UTC)
    for _ in range(400):
        momento = inicio + timedelta(minutes=rnd.randrange(0, 40 * 24 * 60))
        vendas.append(
            helpers.criar_venda(
                loja=rnd.choice(lojas),
                vendedor=rnd.choice(vendedores),
                produto=rnd.choice(produtos),
                data_hora=momento,
                quantidade=rnd.randint(1, 5),
                valor=str(Decimal(rnd.randint(100, 99999)) / 100),
            )
        )
    # 2026-02-01 01:30 UTC is still 31 January in São Paulo (UTC-3).
    vendas.append(
        helpers.criar_venda(
            loja=lojas[0],
            vendedor=vendedores[0],
            produto=produtos[0],
            data_hora=datetime(2026, 2, 1, 1, 30, tzinfo=UTC),
            valor="1000.00",
        )
    )
    alheia = helpers.criar_lojas(outro_tenant, "L1")[0]
    helpers.criar_venda(
        loja=alheia,
        vendedor=helpers.criar_vendedor(outro_tenant),
        produto=helpers.criar_produto(outro_tenant),
        data_hora=datetime(2026, 2, 10, 15, tzinfo=UTC),
        valor="777.77",
    )
    movimentos = []
    for _ in range(300):
        movimentos.append(
            helpers.criar_movimento(
                loja=rnd.choice(lojas),
                produto=rnd.choice(produtos),
                data=date(2026, 1, 1) + timedelta(days=rnd.randrange(0, 90)),
                quantidade=rnd.choice([-1, -2, -3, 5, 10, 40]),
            )
        )
    return {"vendas": vendas, "movimentos": movimentos}


def local(venda: Any) -> datetime:
    return venda.data_hora.astimezone(ZoneInfo(FUSO))


def no_periodo(venda: Any, lojas: set[str]) -> bool:
    dia = local(venda).date()
    return date(2026, 2, 1) <= dia <= date(2026, 2, 28) and (
        not lojas or venda.loja.codigo in lojas
    )


def rotulo(venda: Any, agrupar: str) -> str:
    dia = local(venda).date()
    return dia.isoformat() if agrupar == "dia" else dia.isoformat()[:7]


@pytest.mark.parametrize("agrupar", ["dia", "mes"])
@pytest.mark.parametrize("lojas", [[], ["L1", "L3"]])
def test_vendas_confere_com_a_soma_independente(
    tenant: Tenant, rede: dict[str, Any], agrupar: str, lojas: list[str]
) -> None:
    esperado: dict[tuple[str, str], list[Any]] = defaultdict(
        lambda: [0, 0, Decimal("0")]
    )
    for venda in rede["vendas"]:
        if no_periodo(venda, set(lojas)):
            linha = esperado[(rotulo(venda, agrupar), venda.loja.codigo)]
            linha[0] += 1
            linha[1] += venda.quantidade
            linha[2] += venda.valor

    resultado = rodar(
        tenant,
        "vendas",
        {
            "inicio": "2026-02-01",
            "fim": "2026-02-28",
            "agrupar": agrupar,
            "lojas": lojas,
        },
    )

    obtido = {
        (linha["periodo"], linha["loja"]): [
            linha["vendas"],
            linha["quantidade"],
            Decimal(linha["receita"]),
        ]
        for linha in resultado["linhas"]
    }
    assert obtido == dict(esperado)
    assert [
        (linha["periodo"], linha["loja"]) for linha in resultado["linhas"]
    ] == sorted(esperado)
    assert resultado["totais"] == {
        "vendas": sum(v[0] for v in esperado.values()),
        "quantidade": sum(v[1] for v in esperado.values()),
        "receita": str(sum((v[2] for v in esperado.values()), Decimal("0.00"))),
    }
    assert all(isinstance(linha["receita"], str) for linha in resultado["linhas"])


def test_venda_perto_da_meia_noite_conta_no_dia_local(
    tenant: Tenant, rede: dict[str, Any]
) -> None:
    resultado = rodar(
        tenant,
        "vendas",
        {"inicio": "2026-01-31", "fim": "2026-01-31", "lojas": ["L1"]},
    )
    do_dia = [
        v.valor
        for v in rede["vendas"]
        if v.loja.codigo == "L1" and local(v).date() == date(2026, 1, 31)
    ]
    assert Decimal("1000.00") in do_dia
    assert [linha["periodo"] for linha in resultado["linhas"]] == ["2026-01-31"]
    assert Decimal(resultado["totais"]["receita"]) == sum(do_dia)


@pytest.mark.parametrize("agrupar", ["dia", "mes"])
def test_comissoes_confere_com_a_soma_independente(
    tenant: Tenant, rede: dict[str, Any], agrupar: str
) -> None:
    receitas: dict[tuple[str, int], Decimal] = defaultdict(Decimal)
    taxas: dict[int, Decimal] = {}
    for venda in rede["vendas"]:
        if no_periodo(venda, set()):
            receitas[(rotulo(venda, agrupar), venda.vendedor_id)] += venda.valor
            taxas[venda.vendedor_id] = venda.vendedor.taxa_comissao
    esperado = {
        chave: (receita, (receita * taxas[chave[1]]).quantize(CENTAVO, ROUND_HALF_UP))
        for chave, receita in receitas.items()
    }

    resultado = rodar(
        tenant,
        "comissoes",
        {"inicio": "2026-02-01", "fim": "2026-02-28", "agrupar": agrupar},
    )

    obtido = {
        (linha["periodo"], linha["vendedor_id"]): (
            Decimal(linha["receita"]),
            Decimal(linha["comissao"]),
        )
        for linha in resultado["linhas"]
    }
    assert obtido == esperado
    assert Decimal(resultado["totais"]["receita"]) == sum(
        r for r, _ in esperado.values()
    )
    assert Decimal(resultado["totais"]["comissao"]) == sum(
        c for _, c in esperado.values()
    )


def test_estoque_confere_com_a_soma_independente(
    tenant: Tenant, rede: dict[str, Any]
) -> None:
    inicio, fim = date(2026, 2, 1), date(2026, 2, 28)
    esperado: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"saldo_inicial": 0, "entradas": 0, "saidas": 0, "saldo_final": 0}
    )
    for m in rede["movimentos"]:
        if m.data > fim or m.loja.codigo == "L2":
            continue
        linha = esperado[(m.loja.codigo, m.produto.sku)]
        if m.data < inicio:
            linha["saldo_inicial"] += m.quantidade
        elif m.quantidade > 0:
            linha["entradas"] += m.quantidade
        else:
            linha["saidas"] -= m.quantidade
        linha["saldo_final"] += m.quantidade

    resultado = rodar(
        tenant,
        "estoque",
        {"inicio": "2026-02-01", "fim": "2026-02-28", "lojas": ["L3", "L1"]},
    )

    obtido = {
        (linha["loja"], linha["sku"]): {
            k: linha[k] for k in ("saldo_inicial", "entradas", "saidas", "saldo_final")
        }
        for linha in resultado["linhas"]
    }
    assert obtido == dict(esperado)
    assert [(linha["loja"], linha["sku"]) for linha in resultado["linhas"]] == sorted(
        esperado
    )
    for campo in ("saldo_inicial", "entradas", "saidas", "saldo_final"):
        assert resultado["totais"][campo] == sum(v[campo] for v in esperado.values())


def test_periodo_sem_vendas_da_totais_zerados(tenant: Tenant) -> None:
    resultado = rodar(tenant, "vendas", {"inicio": "2030-01-01", "fim": "2030-03-31"})
    assert resultado == {
        "agrupar": "dia",
        "linhas": [],
        "totais": {"vendas": 0, "quantidade": 0, "receita": "0"},
    }
