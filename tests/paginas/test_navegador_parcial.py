"""The job page draws a running report's partial result, chunk by chunk, in a
real Chromium through the real proxy, web server, events process and qcluster
(issue 34, section 2): the first month's rows are on the manager's screen
while the other eleven are still being computed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from relatorios.models import EstadoDoJob, Tenant
from tests import helpers, processos
from tests.api.test_eventos_parciais import TRAVA, trava  # noqa: F401 (the fixture)
from tests.paginas.test_navegador import (  # noqa: F401 (the fixture)
    ESPERA_MS,
    entrar,
    gerente,
    id_do_job,
    navegador,
)
from tests.paginas.test_navegador_eventos import origem  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]


def com_um_ano_de_vendas(tenant: Tenant) -> None:
    lojas = helpers.criar_lojas(tenant, "L001", "L002", "L003")
    vendedor = helpers.criar_vendedor(tenant)
    produto = helpers.criar_produto(tenant)
    for mes in (1, 2, 7):
        for dia in range(1, 29, 3):
            for i, loja in enumerate(lojas):
                helpers.criar_venda(
                    loja=loja,
                    vendedor=vendedor,
                    produto=produto,
                    data_hora=datetime(2026, mes, dia, 12 + i, tzinfo=UTC),
                    quantidade=1 + (dia + i) % 4,
                    valor=f"{100 * (i + 1) + dia * 7 % 90}.{dia:02d}",
                )


def test_linhas_do_primeiro_mes_aparecem_enquanto_executa(
    tenant: Tenant,
    origem: str,  # noqa: F811
    cluster: Callable[..., processos.Processo],
    pasta_saida: Path,
    navegador: Browser,  # noqa: F811
    trava: Callable[[], None],  # noqa: F811
) -> None:
    com_um_ano_de_vendas(tenant)
    gerente(tenant, "ana")
    contexto = navegador.new_context(
        locale="pt-BR", viewport={"width": 1280, "height": 800}
    )
    pagina = contexto.new_page()
    pedidos: list[str] = []
    pagina.on("request", lambda pedido: pedidos.append(pedido.url))
    entrar(pagina, origem, "ana")

    formulario = pagina.locator("#pedido-teste_vendas_em_espera")
    formulario.locator("input[name='teste_vendas_em_espera-inicio']").fill("2026-01-01")
    formulario.locator("input[name='teste_vendas_em_espera-fim']").fill("2026-12-31")
    formulario.locator("select[name='teste_vendas_em_espera-agrupar']").select_option(
        "dia"
    )
    with pagina.expect_request(lambda p: p.url.endswith("/eventos"), timeout=ESPERA_MS):
        formulario.locator("button[type=submit]").click()
    job_id = id_do_job(pagina)
    pagina.evaluate("window.__semRecarregar = true")
    cluster(RELATORIOS_TESTE_TRAVA=str(TRAVA))

    parcial = pagina.locator("[data-campo='parcial']")
    linhas = parcial.locator("table[data-campo='resultado'] tbody tr")
    expect(linhas).to_have_count(30, timeout=ESPERA_MS)
    expect(parcial).to_contain_text("1 de 12 partes prontas")
    expect(parcial).to_contain_text("01/01/2026 a 31/01/2026")
    expect(linhas.first).to_contain_text("01/01/2026")
    expect(parcial.locator("figure.grafico.desenhado")).to_be_visible()
    # Still running: the other months wait for the test's lock.
    expect(pagina.locator("[data-campo='status']")).to_have_text("Executando")
    assert helpers.job(job_id).status == EstadoDoJob.EXECUTANDO
    pagina.screenshot(path=str(pasta_saida / "parcial.png"), full_page=True)

    trava()
    status = pagina.locator("[data-campo='status']")
    expect(status).to_have_text("Pronto", timeout=ESPERA_MS)
    expect(parcial).to_have_count(0)
    expect(pagina.locator("table[data-campo='resultado'] tbody tr")).to_have_count(90)
    assert pagina.evaluate("window.__semRecarregar") is True
    # Drawn from the stream's events: no poll of the status endpoint.
    assert not [p for p in pedidos if p.endswith(f"/relatorios/jobs/{job_id}")]
