"""Everything fits on a 1280 × 800 laptop: no sideways scroll, the actions and
the errors in view (issue 35, item 2), in a real Chromium against the real
web server."""

from __future__ import annotations

import os
import re
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import global_settings
from django.test import override_settings
from playwright.sync_api import Browser, Page, expect

from relatorios.agendamentos import alertas
from relatorios.jobs import pedidos, suporte
from relatorios.models import Tenant, Usuario, permissoes
from tests import helpers
from tests.paginas.test_navegador import (
    ESPERA_MS,
    SENHA,
    entrar,
    gerente,
    navegador,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

TELA = {"width": 1280, "height": 800}
DOCS = Path(__file__).resolve().parents[2] / "docs"
MOTIVO_LONGO = (
    "ERP indisponível: a consulta de vendas da loja L0042 excedeu o tempo "
    "limite do banco de dados do cliente depois de três tentativas seguidas"
)


def sem_rolagem_lateral(pagina: Page) -> None:
    largura = pagina.evaluate(
        "() => [document.scrollingElement.scrollWidth, window.innerWidth]"
    )
    assert largura[0] <= largura[1], largura


def dentro_da_tela(pagina: Page, seletor: str) -> int:
    caixas: list[Any] = pagina.eval_on_selector_all(
        seletor,
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return [r.left, r.right, r.width]; })",
    )
    assert caixas, seletor
    for esquerda, direita, largura in caixas:
        assert largura > 0, seletor
        assert esquerda >= 0, (seletor, esquerda)
        assert direita <= TELA["width"], (seletor, direita)
    return len(caixas)


def capturar(pagina: Page, nome: str, pasta_saida: Path) -> None:
    pagina.screenshot(path=str(pasta_saida / nome))
    if os.environ.get("RELATORIOS_ATUALIZAR_CAPTURA"):
        # `RELATORIOS_ATUALIZAR_CAPTURA=1 make test` refreshes docs/'s images.
        shutil.copy(pasta_saida / nome, DOCS / nome)


def test_agendamentos_cabem_com_pausar_e_excluir_a_vista(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
    pasta_saida: Path,
) -> None:
    helpers.criar_lojas(tenant, "L001", "L002", "L003")
    gerente(tenant, "ana")
    for nome, cron in [
        ("Fechamento mensal da contabilidade e do financeiro", "0 3 L * *"),
        ("Vendas da semana", "30 6 * * 1,3,5"),
        ("Vendas do dia", "*/15 8-18 * * 1-5"),
    ]:
        agendamento = helpers.criar_agendamento(
            tenant,
            nome=nome,
            cron=cron,
            lojas=["L001", "L002", "L003"],
            destinatarios=["contabilidade.financeiro@rede.com"],
        )
        alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=4))
    pagina = navegador.new_context(locale="pt-BR", viewport=TELA).new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, servidor, "ana")
    pagina.goto(f"{servidor}/painel/agendamentos/")
    expect(pagina.locator("tr[data-agendamento]")).to_have_count(3)

    sem_rolagem_lateral(pagina)
    assert dentro_da_tela(pagina, "tr[data-agendamento] button:has-text('Pausar')") == 3
    assert (
        dentro_da_tela(pagina, "tr[data-agendamento] button:has-text('Excluir')") == 3
    )
    # The cron itself is one hover away, not a line of the cell.
    assert pagina.locator("[data-campo='descricao'][title*='cron']").count() == 3
    pagina.evaluate("document.querySelector('h2 + .rolavel').scrollIntoView()")
    capturar(pagina, "agendamentos-1280.png", pasta_saida)


def test_painel_do_gerente_cabe(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
) -> None:
    helpers.criar_lojas(tenant, "L001")
    gerente(tenant, "ana")
    pagina = navegador.new_context(locale="pt-BR", viewport=TELA).new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, servidor, "ana")
    sem_rolagem_lateral(pagina)


def suporte_com_senha(usuario: str) -> Usuario:
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        pessoa = helpers.criar_usuario(
            None, username=usuario, password=SENHA, is_staff=True
        )[0]
    pessoa.groups.add(permissoes.criar_grupo_suporte())
    return pessoa


def entrar_no_admin(pagina: Page, servidor: str, destino: str) -> None:
    pagina.goto(f"{servidor}/admin/login/?next={destino}")
    pagina.fill("#id_username", "sofia")
    pagina.fill("#id_password", SENHA)
    pagina.click("input[type=submit]")
    expect(pagina).to_have_url(f"{servidor}{destino}")


def test_lista_de_jobs_do_admin_mostra_o_erro_sem_rolar(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
    pasta_saida: Path,
) -> None:
    suporte_com_senha("sofia")
    for inicio, fim in [
        ("2026-01-01", "2026-01-31"),
        ("2026-02-01", "2026-02-28"),
        ("2026-03-01", "2026-03-31"),
    ]:
        job_id = pedidos.submeter(
            tenant_id=tenant.pk,
            tipo="fechamento",
            params_brutos={"inicio": inicio, "fim": fim},
            usuario_id=None,
        ).job.id
        suporte.marcar_como_falhou(job_id=job_id, motivo=MOTIVO_LONGO)
    pagina = navegador.new_context(locale="pt-BR", viewport=TELA).new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar_no_admin(pagina, servidor, "/admin/relatorios/relatoriojob/")

    sem_rolagem_lateral(pagina)
    dentro_da_tela(pagina, "#result_list th.column-erro_resumido")
    assert dentro_da_tela(pagina, "#result_list td.field-erro_resumido") == 3
    capturar(pagina, "admin-jobs-1280.png", pasta_saida)


def test_falhas_por_motivo_quebram_a_linha_e_tem_tabela(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
    pasta_saida: Path,
) -> None:
    suporte_com_senha("sofia")
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-31"},
        usuario_id=None,
    ).job.id
    suporte.marcar_como_falhou(job_id=job_id, motivo=MOTIVO_LONGO.replace(":", ","))
    pagina = navegador.new_context(locale="pt-BR", viewport=TELA).new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar_no_admin(pagina, servidor, "/admin/painel/")
    expect(pagina.locator("figure.grafico-do-painel.desenhado").first).to_be_visible()

    sem_rolagem_lateral(pagina)
    rotulos = pagina.evaluate(
        "() => Chart.getChart(document.querySelector("
        "'canvas[data-grafico-do-painel=falhas]')).data.labels"
    )
    # A long reason is drawn on several short lines, every word kept.
    [rotulo] = rotulos
    assert isinstance(rotulo, list)
    assert len(rotulo) > 1
    assert all(len(linha) <= 40 for linha in rotulo)
    assert " ".join(rotulo) == MOTIVO_LONGO.replace(":", ",")
    # And the table beside each chart says it in full (the chart's alternative).
    tabela = pagina.locator("[data-painel=falhas] table.tabela-do-grafico")
    expect(tabela).to_contain_text(MOTIVO_LONGO.replace(":", ","))
    dentro_da_tela(pagina, "section[data-painel]")
    pagina.locator("[data-painel=falhas]").scroll_into_view_if_needed()
    capturar(pagina, "painel-falhas-1280.png", pasta_saida)

    # The bar clicks through to the jobs that failed for that reason.
    tela = pagina.locator("canvas[data-grafico-do-painel=falhas]")
    x, y = pagina.evaluate(
        "() => { const c = Chart.getChart(document.querySelector("
        "'canvas[data-grafico-do-painel=falhas]'));"
        " const barra = c.getDatasetMeta(1).data[0]; return [barra.x - 2, barra.y]; }"
    )
    tela.click(position={"x": x, "y": y})
    expect(pagina).to_have_url(re.compile(r"/admin/relatorios/relatoriojob/\?"))
    assert "erro__startswith=" in pagina.url
    expect(pagina.locator("#result_list tbody tr")).to_have_count(1)
    expect(pagina.locator("#result_list .field-id")).to_have_text(str(job_id))
