"""The chart above a finished job's table: its data (summed in SQL), its
drawing in a real Chromium, and the vendored Chart.js it is drawn with."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, expect

from relatorios.apresentacao import grafico
from relatorios.jobs import pedidos
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from tests.paginas.test_navegador import (
    ESPERA_MS,
    entrar,
    gerente,
    navegador,  # noqa: F401 (a fixture)
)
from tests.processos import RAIZ

VENDOR = RAIZ / "relatorios" / "static" / "relatorios" / "vendor" / "chartjs"


def linha_de_vendas(periodo: str, loja: str, receita: str) -> dict[str, Any]:
    return {
        "periodo": periodo,
        "loja": loja,
        "loja_nome": f"Loja {loja}",
        "vendas": 1,
        "quantidade": 1,
        "receita": receita,
    }


VENDAS = {
    "agrupar": "dia",
    "linhas": [
        linha_de_vendas("2026-01-01", "L001", "100.50"),
        linha_de_vendas("2026-01-01", "L002", "20.00"),
        linha_de_vendas("2026-01-02", "L001", "80.25"),
        linha_de_vendas("2026-01-03", "L002", "10.00"),
        linha_de_vendas("2026-01-03", "L001", "5.00"),
    ],
    "totais": {"vendas": 5, "quantidade": 5, "receita": "215.75"},
}


def pronto(
    tenant: Tenant,
    tipo: str,
    resultado: Any,
    inicio: str = "2026-01-01",
    fim: str = "2026-01-31",
) -> int:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo=tipo,
        params_brutos={"inicio": inicio, "fim": fim, "agrupar": "dia"},
        usuario_id=None,
    ).job.id
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado=resultado,
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(hours=1),
    )
    return job_id


def dados_de(job_id: int) -> dict[str, Any] | None:
    return grafico.dados(RelatorioJob.objects.get(pk=job_id))


@pytest.mark.django_db
def test_vendas_uma_linha_por_loja_no_tempo(tenant: Tenant) -> None:
    dados = dados_de(pronto(tenant, "vendas", VENDAS))

    assert dados == {
        "forma": "line",
        "titulo": "Receita por período, por loja",
        "rotulos": ["01/01/2026", "02/01/2026", "03/01/2026"],
        "series": [
            # The stores by name in the legend (the series are by code).
            {"nome": "Loja L001", "valores": [100.5, 80.25, 5.0]},
            {"nome": "Loja L002", "valores": [20.0, None, 10.0]},
        ],
        "moeda": True,
    }


@pytest.mark.django_db
def test_um_ano_por_dia_e_desenhado_por_semana(tenant: Tenant) -> None:
    linhas = [
        linha_de_vendas("2026-01-05", "L001", "1.00"),  # a Monday
        linha_de_vendas("2026-01-11", "L001", "2.00"),  # its Sunday
        linha_de_vendas("2026-01-12", "L001", "4.00"),  # the next Monday
        linha_de_vendas("2026-12-31", "L002", "8.00"),
    ]
    resultado = {"agrupar": "dia", "linhas": linhas, "totais": {}}
    dados = dados_de(pronto(tenant, "vendas", resultado, fim="2026-12-31"))

    assert dados is not None
    assert dados["titulo"].endswith("(por semana, de segunda a domingo)")
    assert dados["rotulos"] == ["05/01/2026", "12/01/2026", "28/12/2026"]
    assert dados["series"] == [
        {"nome": "Loja L002", "valores": [None, None, 8.0]},
        {"nome": "Loja L001", "valores": [3.0, 4.0, None]},
    ]


@pytest.mark.django_db
def test_lojas_demais_viram_outras(tenant: Tenant) -> None:
    linhas = [
        linha_de_vendas("2026-01-01", f"L{n:03d}", str(100 - n)) for n in range(12)
    ]
    dados = dados_de(pronto(tenant, "vendas", {"linhas": linhas, "totais": {}}))

    assert dados is not None
    nomes = [s["nome"] for s in dados["series"]]
    assert nomes == [f"Loja L{n:03d}" for n in range(grafico.MAX_SERIES)] + ["Outras"]
    # The four smallest stores (92 + 91 + 90 + 89) in one series.
    assert dados["series"][-1]["valores"] == [362.0]


@pytest.mark.django_db
def test_estoque_os_menores_saldos_e_comissoes_os_maiores(tenant: Tenant) -> None:
    estoque = {
        "linhas": [
            {"loja": loja, "sku": sku, "produto": nome, "saldo_final": saldo}
            for loja, sku, nome, saldo in (
                ("L001", "S1", "Camiseta", 5),
                ("L002", "S1", "Camiseta", 4),
                ("L001", "S2", "Boné", 50),
                ("L001", "S3", "Meia", 2),
            )
        ],
        "totais": {},
    }
    comissoes = {
        "linhas": [
            {"vendedor_id": v, "vendedor": nome, "comissao": c, "periodo": p}
            for v, nome, c, p in (
                (1, "Ana", "10.00", "2026-01-01"),
                (2, "Bia", "30.00", "2026-01-01"),
                (1, "Ana", "25.50", "2026-01-02"),
            )
        ],
        "totais": {},
    }

    do_estoque = dados_de(pronto(tenant, "estoque", estoque))
    das_comissoes = dados_de(pronto(tenant, "comissoes", comissoes))

    assert do_estoque is not None
    assert (do_estoque["forma"], do_estoque["moeda"]) == ("bar", False)
    assert do_estoque["rotulos"] == ["Meia", "Camiseta", "Boné"]
    assert do_estoque["series"] == [
        {"nome": "Saldo final", "valores": [2.0, 9.0, 50.0]}
    ]
    assert das_comissoes is not None
    assert das_comissoes["rotulos"] == ["Ana", "Bia"]
    assert das_comissoes["series"][0]["valores"] == [35.5, 30.0]


@pytest.mark.django_db
def test_sem_linhas_ou_sem_grafico_nao_ha_grafico(tenant: Tenant) -> None:
    vazio = pronto(tenant, "vendas", {"linhas": [], "totais": {}})
    outro = pronto(tenant, "teste_fechamento", {"linhas": [{"a": 1}]})

    assert dados_de(vazio) is None
    assert dados_de(outro) is None


def test_o_chart_js_vendorizado_e_o_que_version_diz() -> None:
    versao = dict(
        linha.split(" ", 1) for linha in (VENDOR / "VERSION").read_text().splitlines()
    )
    conteudo = (VENDOR / "chart.umd.min.js").read_bytes()

    assert hashlib.sha256(conteudo).hexdigest() == versao["sha256"]
    assert conteudo.startswith(f"/*!\n * Chart.js v{versao['chart.js']}".encode())
    assert "MIT" in (VENDOR / "LICENSE.md").read_text()
    assert b"sourceMappingURL" not in conteudo


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_o_grafico_e_desenhado_no_chromium_com_as_series_do_resultado(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
    pasta_saida: Path,
) -> None:
    gerente(tenant, "ana")
    job_id = pronto(tenant, "vendas", VENDAS)
    contexto = navegador.new_context(
        viewport={"width": 1100, "height": 1000}, locale="pt-BR"
    )
    pagina = contexto.new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, servidor, "ana")
    pagina.goto(f"{servidor}/painel/jobs/{job_id}/")
    figura = pagina.locator("figure.grafico")
    expect(figura).to_have_class("grafico desenhado")
    desenhado = pagina.evaluate(
        """() => {
          const c = Chart.getChart(document.querySelector('canvas[data-grafico]'));
          return {tipo: c.config.type, rotulos: c.data.labels,
                  series: c.data.datasets.map(d => [d.label, d.data]),
                  largura: c.width, altura: c.height};
        }"""
    )
    # For a look (test-output/); the README's picture is test_navegador's.
    pagina.locator("#job").screenshot(path=str(pasta_saida / "grafico.png"))
    contexto.close()

    assert desenhado["tipo"] == "line"
    assert desenhado["rotulos"] == ["01/01/2026", "02/01/2026", "03/01/2026"]
    assert desenhado["series"] == [
        ["Loja L001", [100.5, 80.25, 5]],
        ["Loja L002", [20, None, 10]],
    ]
    assert desenhado["largura"] > 300
    assert desenhado["altura"] > 100


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_sem_javascript_a_pagina_e_a_tabela(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
) -> None:
    gerente(tenant, "ana")
    job_id = pronto(tenant, "vendas", VENDAS)
    contexto = navegador.new_context(java_script_enabled=False, locale="pt-BR")
    pagina = contexto.new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, servidor, "ana")
    pagina.goto(f"{servidor}/painel/jobs/{job_id}/")

    expect(pagina.locator("figure.grafico")).to_be_hidden()
    expect(pagina.locator("table.resultado tbody tr")).to_have_count(5)
    contexto.close()
