"""The job page follows its job over the event stream, in a real Chromium, through
the real proxy (nginx with deploy/nginx/relatorios.conf) in front of the real
web server and events process, with a real qcluster running the job."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from relatorios.models import EstadoDoJob, Tenant
from tests import helpers, processos
from tests.paginas.test_navegador import (  # noqa: F401 (the fixture)
    ESPERA_MS,
    entrar,
    gerente,
    id_do_job,
    navegador,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]


@pytest.fixture
def origem(transactional_db: None, pasta_saida: Path) -> Iterator[str]:
    """One origin for the browser: the proxy, the web server and the events
    process behind it."""
    web, url_web = processos.iniciar_web(pasta_saida / "web.log")
    eventos, url_eventos = processos.iniciar_eventos(pasta_saida / "eventos.log")
    proxy, url = processos.iniciar_proxy(
        pasta_saida / "proxy.log", web=url_web, eventos=url_eventos
    )
    yield url
    for processo in (proxy, eventos, web):
        processo.parar()


def test_pagina_do_job_segue_o_fluxo_sem_consultar_o_status(
    tenant: Tenant,
    origem: str,
    cluster: Callable[..., processos.Processo],
    pasta_saida: Path,
    navegador: Browser,  # noqa: F811
) -> None:
    gerente(tenant, "ana")
    pagina = navegador.new_context(locale="pt-BR").new_page()
    pedidos: list[str] = []
    pagina.on("request", lambda pedido: pedidos.append(pedido.url))
    entrar(pagina, origem, "ana")

    # Four monthly chunks of two seconds each: time to see the bar move.
    formulario = pagina.locator("#pedido-teste_lento")
    formulario.locator("input[name='teste_lento-inicio']").fill("2026-01-01")
    formulario.locator("input[name='teste_lento-fim']").fill("2026-04-30")
    with pagina.expect_request(lambda p: p.url.endswith("/eventos"), timeout=ESPERA_MS):
        formulario.locator("button[type=submit]").click()
    job_id = id_do_job(pagina)
    status = pagina.locator("[data-campo='status']")
    expect(status).to_have_text("Na fila")
    pagina.evaluate("window.__semRecarregar = true")

    cluster(RELATORIOS_TESTE_PAUSA_S="2")
    barra = pagina.locator("[data-campo='barra']")
    expect(barra).to_have_js_property("value", 50, timeout=ESPERA_MS)
    expect(pagina.locator("[data-campo='progresso']")).to_have_text("50%")
    expect(status).to_have_text("Pronto", timeout=ESPERA_MS)
    pagina.screenshot(path=str(pasta_saida / "pagina-com-eventos.png"), full_page=True)

    assert pagina.evaluate("window.__semRecarregar") is True
    assert helpers.job(job_id).status == EstadoDoJob.PRONTO
    assert f"{origem}/relatorios/jobs/{job_id}/eventos" in pedidos
    # No poll of the status endpoint: every change came by the stream.
    assert not [p for p in pedidos if p.endswith(f"/relatorios/jobs/{job_id}")]
