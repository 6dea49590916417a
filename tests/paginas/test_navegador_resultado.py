"""The finished result's page as a manager sees it at 1280x800, in a real
Chromium against the real web server (issue 35, section 6): a totals row that
says what it totals, a header that stays in view, sorting by a column, a year
of days drawn by week with the stores by name, and the monthly close's month
by name with its changes signed and coloured."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect

from relatorios.jobs import pedidos
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from tests.paginas.test_navegador import (  # noqa: F401 (the fixture)
    ESPERA_MS,
    entrar,
    gerente,
    navegador,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

LOJAS = {"L001": "Loja Centro", "L002": "Loja Norte", "L003": "Loja Sul"}


def pronto(tenant: Tenant, tipo: str, params: dict[str, Any], resultado: Any) -> int:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk, tipo=tipo, params_brutos=params, usuario_id=None
    ).job.id
    agora = timezone.now()
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado=resultado,
        progresso=100,
        iniciado_em=agora,
        concluido_em=agora,
        expira_em=agora + timedelta(hours=1),
    )
    return job_id


def na_pagina_do_job(navegador: Browser, servidor: str, job_id: int) -> Page:  # noqa: F811
    """Ana's view of the job's page, at 1280x800."""
    pagina = navegador.new_context(
        locale="pt-BR", viewport={"width": 1280, "height": 800}
    ).new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, servidor, "ana")
    pagina.goto(f"{servidor}/painel/jobs/{job_id}/")
    return pagina


def um_ano_por_dia() -> dict[str, Any]:
    linhas = []
    dia = date(2026, 1, 1)
    while dia.year == 2026:
        for n, (codigo, nome) in enumerate(LOJAS.items()):
            receita = 1000 + 300 * n + (dia.toordinal() * 37 + n * 11) % 500
            linhas.append(
                {
                    "periodo": dia.isoformat(),
                    "loja": codigo,
                    "loja_nome": nome,
                    "vendas": 10 + n,
                    "quantidade": 20 + n,
                    "receita": f"{receita}.{(dia.day * 7) % 100:02d}",
                }
            )
        dia += timedelta(days=1)
    return {
        "agrupar": "dia",
        "linhas": linhas,
        "totais": {"vendas": 11 * len(linhas), "quantidade": 0, "receita": "1.00"},
    }


def test_pagina_do_resultado_de_um_ano_por_dia(
    tenant: Tenant,
    servidor: str,
    pasta_saida: Path,
    navegador: Browser,  # noqa: F811
) -> None:
    gerente(tenant, "ana")
    job_id = pronto(
        tenant,
        "vendas",
        {"inicio": "2026-01-01", "fim": "2026-12-31", "agrupar": "dia"},
        um_ano_por_dia(),
    )
    pagina = na_pagina_do_job(navegador, servidor, job_id)

    tabela = pagina.locator("table[data-campo='resultado']")
    expect(tabela.locator("tbody tr")).to_have_count(500)
    expect(tabela.locator("tfoot th").first).to_have_text(
        "Total do período, todas as 1.095 linhas"
    )
    expect(pagina.locator("figure.grafico")).to_have_class("grafico desenhado")
    pagina.screenshot(path=str(pasta_saida / "resultado.png"))
    desenhado = pagina.evaluate(
        """() => {
          const c = Chart.getChart(document.querySelector('canvas[data-grafico]'));
          return {n: c.data.labels.length, series: c.data.datasets.map(d => d.label)};
        }"""
    )
    # A year of days by week (53 weeks touch 2026), the stores by name.
    assert desenhado["n"] == 53
    assert sorted(desenhado["series"]) == sorted(LOJAS.values())
    expect(pagina.locator("figcaption")).to_contain_text("por semana")

    # The header stays at the top of its box while the lines scroll under it.
    caixa = pagina.locator(".rolavel-resultado")
    caixa.scroll_into_view_if_needed()
    titulo = tabela.locator("thead th").first
    primeira = tabela.locator("tbody tr").first
    topo_da_caixa = caixa.bounding_box()["y"]  # type: ignore[index]
    caixa.evaluate("c => { c.scrollTop = 4000; }")
    assert caixa.evaluate("c => c.scrollTop") > 1000
    assert titulo.bounding_box()["y"] == pytest.approx(topo_da_caixa, abs=1)  # type: ignore[index]
    assert primeira.bounding_box()["y"] < topo_da_caixa  # type: ignore[index]
    expect(titulo).to_be_in_viewport()
    pagina.screenshot(path=str(pasta_saida / "resultado-rolado.png"))

    # Sorting by revenue: ascending, then descending, by the numbers.
    receita = tabela.locator("thead th button", has_text="Receita")
    receita.click()
    valores = tabela.locator("tbody tr td:nth-child(6)")
    crescente = [float(v) for v in valores.evaluate_all(_VALORES)]
    receita.click()
    decrescente = [float(v) for v in valores.evaluate_all(_VALORES)]
    assert crescente == sorted(crescente)
    assert decrescente == sorted(crescente, reverse=True)
    expect(tabela.locator("thead th").nth(5)).to_have_attribute(
        "aria-sort", "descending"
    )
    # The totals row stays under the lines.
    expect(tabela.locator("tfoot th").first).to_contain_text("Total do período")


_VALORES = "tds => tds.map(td => td.dataset.valor)"


def test_fechamento_mostra_o_mes_e_as_variacoes_com_sinal_e_cor(
    tenant: Tenant,
    servidor: str,
    pasta_saida: Path,
    navegador: Browser,  # noqa: F811
) -> None:
    gerente(tenant, "ana")
    figuras = {
        "receita": "150000.00",
        "variacao_receita": "0.1234",
        "devolucoes": "3100.00",
        "variacao_devolucoes": "-0.0310",
        "comissoes": "4500.00",
        "variacao_comissoes": "0.1234",
        "estoque_final": "98000.00",
        "variacao_estoque_final": None,
    }
    job_id = pronto(
        tenant,
        "fechamento",
        {"inicio": "2026-11-01", "fim": "2026-11-30"},
        {
            "mes": "2026-11",
            "mes_anterior": "2026-10",
            "linhas": [{"loja": "L001", "loja_nome": "Loja Centro", **figuras}],
            "totais": figuras,
        },
    )
    pagina = na_pagina_do_job(navegador, servidor, job_id)

    expect(pagina.locator("p.resumo")).to_have_text("novembro de 2026 · todas as lojas")
    expect(pagina.locator("[data-campo='comparacao']")).to_have_text(
        "Novembro de 2026 comparado com outubro de 2026"
    )
    linha = pagina.locator("table[data-campo='resultado'] tbody tr").first
    alta, queda = linha.locator("td.alta").first, linha.locator("td.queda").first
    expect(alta).to_have_text("+12,34%")
    expect(queda).to_have_text("−3,10%")
    verde = alta.evaluate("td => getComputedStyle(td).color")
    vermelho = queda.evaluate("td => getComputedStyle(td).color")
    assert (verde, vermelho) == ("rgb(43, 138, 62)", "rgb(201, 42, 42)")
    pagina.locator("#job").screenshot(path=str(pasta_saida / "fechamento.png"))
