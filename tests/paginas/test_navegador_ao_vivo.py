"""The painel and the schedules list follow the tenant's event stream without a
reload (issue 35, item 5), in a real Chromium through the real proxy, web
server and events process."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import Browser, expect

from relatorios.agendamentos import alertas, disparo
from relatorios.jobs import pedidos, suporte
from relatorios.models import Tenant
from tests import helpers
from tests.paginas.test_navegador import (  # noqa: F401 (the fixture)
    ESPERA_MS,
    entrar,
    gerente,
    navegador,
)
from tests.paginas.test_navegador_eventos import origem  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]


def test_painel_mostra_o_pedido_novo_e_o_alerta_sem_recarregar(
    tenant: Tenant,
    origem: str,  # noqa: F811
    navegador: Browser,  # noqa: F811
) -> None:
    gerente(tenant, "ana")
    pagina = navegador.new_context(locale="pt-BR").new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, origem, "ana")
    with pagina.expect_request(lambda p: p.url.endswith("/relatorios/eventos")):
        pagina.reload()
    pagina.evaluate("window.__semRecarregar = true")

    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-31"},
        usuario_id=None,
    ).job.id
    recentes = pagina.locator("[data-ao-vivo=recentes]")
    expect(recentes.locator(f"a[href='/painel/jobs/{job_id}/']").first).to_be_visible()
    suporte.marcar_como_falhou(job_id=job_id, motivo="ERP fora do ar")
    expect(recentes).to_contain_text("Falhou")

    agendamento = helpers.criar_agendamento(tenant)
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=4))
    expect(pagina.locator("[data-ao-vivo=alertas]")).to_have_text("1 alerta aberto")
    assert pagina.evaluate("window.__semRecarregar") is True


def test_agendamentos_mostram_a_execucao_sem_recarregar(
    tenant: Tenant,
    origem: str,  # noqa: F811
    navegador: Browser,  # noqa: F811
) -> None:
    gerente(tenant, "ana")
    agendamento = helpers.criar_agendamento(tenant, nome="Vendas do dia")
    pagina = navegador.new_context(locale="pt-BR").new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, origem, "ana")
    with pagina.expect_request(lambda p: p.url.endswith("/relatorios/eventos")):
        pagina.goto(f"{origem}/painel/agendamentos/")
    pagina.evaluate("window.__semRecarregar = true")

    ocorrencia = disparo.executar_agora(agendamento_id=agendamento.pk)
    linha = pagina.locator(f"tr[data-agendamento='{agendamento.pk}']")
    expect(linha.locator("[data-desfecho]")).to_have_text("Em andamento (manual)")
    suporte.marcar_como_falhou(job_id=ocorrencia.job_id, motivo="ERP fora do ar")
    expect(linha.locator("[data-desfecho]")).to_have_text("Falhou (manual)")
    assert pagina.evaluate("window.__semRecarregar") is True
