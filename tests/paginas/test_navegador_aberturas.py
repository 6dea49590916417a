"""A manager in a real headless Chromium, against the real web server: a
schedule whose last three deliveries nobody opened is flagged on their
schedule page and paused in one click; one read is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from relatorios.models import Agendamento, Tenant
from tests.agendamentos.entregues import LEITORES, agendamento, entregar, link
from tests.paginas.test_navegador import (
    ESPERA_MS,
    entrar,
    gerente,
    navegador,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]


def test_agendamento_que_ninguem_abre_e_sinalizado_e_pausado_em_um_clique(
    tenant: Tenant,
    outro_tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
    pasta_saida: Path,
) -> None:
    ignorado = agendamento(tenant, nome="Estoque diário")
    lido = agendamento(tenant, nome="Vendas diárias")
    anexado = agendamento(tenant, nome="Fechamento anexado", entrega="anexo")
    alheio = agendamento(outro_tenant, nome="De outra rede")
    entregar(ignorado, 3)
    entregar(anexado, 3)
    entregar(alheio, 3)
    *_, ultima_lida = entregar(lido, 3)
    gerente(tenant, "ana")
    pagina = navegador.new_context(locale="pt-BR").new_page()
    pagina.set_default_timeout(ESPERA_MS)
    # A recipient opens the newest delivery of one schedule by its link.
    resposta = pagina.request.get(f"{servidor}{link(ultima_lida, LEITORES[0])}")
    assert resposta.status == 200
    entrar(pagina, servidor, "ana")

    pagina.goto(f"{servidor}/painel/agendamentos/")

    sinal = pagina.locator("#sem-leitura")
    expect(sinal).to_be_visible()
    expect(sinal.locator("[data-sem-leitura]")).to_have_count(1)
    item = sinal.locator(f"[data-sem-leitura='{ignorado.pk}']")
    expect(item).to_contain_text("Estoque diário")
    expect(item).to_contain_text("aberto em 0 das últimas 3 entregas")

    def aberturas(programado: Agendamento) -> object:
        return pagina.locator(
            f"tr[data-agendamento='{programado.pk}'] [data-campo='aberturas']"
        )

    expect(aberturas(ignorado)).to_contain_text("ninguém abriu as últimas 3")
    expect(aberturas(lido)).to_have_text("aberto em 1 das últimas 3 entregas")
    expect(aberturas(anexado)).to_contain_text("anexo: aberturas não rastreáveis")
    expect(pagina.locator("body")).not_to_contain_text("De outra rede")
    sinal.screenshot(path=str(pasta_saida / "sem-leitura.png"))

    item.get_by_role("button", name="Pausar").click()

    expect(pagina.locator("body")).to_contain_text(
        "Agendamento «Estoque diário» pausado."
    )
    expect(pagina.locator("form[data-desfazer] button")).to_have_text(
        "Desfazer (retomar «Estoque diário»)"
    )
    expect(pagina.locator("#sem-leitura")).to_have_count(0)
    expect(
        pagina.locator(f"tr[data-agendamento='{ignorado.pk}'] button")
    ).to_contain_text(["Retomar", "Excluir"])
    situacao = dict(Agendamento.objects.values_list("pk", "ativo"))
    assert situacao == {
        ignorado.pk: False,
        lido.pk: True,
        anexado.pk: True,
        alheio.pk: True,
    }
