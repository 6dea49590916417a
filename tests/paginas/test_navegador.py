"""A manager in a real headless Chromium, against the real web server and qcluster."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import global_settings as settings
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect, sync_playwright

from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from tests import helpers
from tests.processos import RAIZ, Processo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

CHROMIUM = "/usr/bin/chromium"
SENHA = "senha-de-teste-123"
# Liveness bounds (ms) for Playwright's waits: generous on a shared 2-core
# machine; a working page takes a few seconds.
ESPERA_MS = 90_000


@pytest.fixture(scope="module")
def navegador() -> Iterator[Browser]:
    """Debian's Chromium (installed by .ci/run), never a downloaded build."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} ausente: apt-get install -y chromium")
    # Playwright's sync API runs an event loop in this thread, and Django then
    # refuses ORM calls; the test's own calls are synchronous and safe.
    with pytest.MonkeyPatch.context() as ambiente, sync_playwright() as playwright:
        ambiente.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


def com_vendas(tenant: Tenant) -> None:
    l1, l2 = helpers.criar_lojas(tenant, "L001", "L002")
    vendedor = helpers.criar_vendedor(tenant)
    produto = helpers.criar_produto(tenant)
    for loja, dia, quantidade, valor in (
        (l1, datetime(2026, 1, 10, 15, tzinfo=UTC), 2, "100.50"),
        (l2, datetime(2026, 1, 20, 15, tzinfo=UTC), 3, "1234.00"),
        (l1, datetime(2026, 2, 5, 15, tzinfo=UTC), 1, "20.25"),
    ):
        helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=produto,
            data_hora=dia,
            quantidade=quantidade,
            valor=valor,
        )


def gerente(tenant: Tenant, usuario: str, **campos: Any) -> None:
    # The test session hashes with MD5 for speed; the web server verifies with the
    # project's hashers.
    with override_settings(PASSWORD_HASHERS=settings.PASSWORD_HASHERS):
        helpers.criar_usuario(tenant, username=usuario, password=SENHA, **campos)


def entrar(pagina: Page, servidor: str, usuario: str) -> None:
    pagina.goto(f"{servidor}/painel/")
    expect(pagina).to_have_url(re.compile(r"/entrar/\?next=/painel/$"))
    pagina.fill("#id_username", usuario)
    pagina.fill("#id_password", SENHA)
    pagina.click("button:has-text('Entrar')")
    expect(pagina).to_have_url(f"{servidor}/painel/")


def id_do_job(pagina: Page) -> int:
    expect(pagina).to_have_url(re.compile(r"/painel/jobs/\d+/$"))
    return int(re.findall(r"/painel/jobs/(\d+)/$", pagina.url)[0])


def test_gerente_pede_acompanha_e_baixa_o_relatorio(
    tenant: Tenant,
    outro_tenant: Tenant,
    servidor: str,
    cluster: Callable[..., Processo],
    pasta_saida: Path,
    navegador: Browser,
) -> None:
    com_vendas(tenant)
    gerente(tenant, "ana", first_name="Ana", last_name="Souza")
    gerente(outro_tenant, "bruno")
    contexto = navegador.new_context(
        viewport={"width": 1100, "height": 900}, locale="pt-BR", accept_downloads=True
    )
    pagina = contexto.new_page()
    entrar(pagina, servidor, "ana")

    # Request January and February by month, all stores. No cluster runs yet,
    # so the job stays pending for as long as the test looks at it.
    formulario = pagina.locator("#pedido-vendas")
    formulario.locator("input[name='vendas-inicio']").fill("2026-01-01")
    formulario.locator("input[name='vendas-fim']").fill("2026-02-28")
    formulario.locator("select[name='vendas-agrupar']").select_option("mes")
    formulario.locator("button[type=submit]").click()
    job_id = id_do_job(pagina)

    status = pagina.locator("[data-campo='status']")
    botao = pagina.locator("[data-campo='botao']")
    expect(status).to_have_text("Na fila")
    expect(botao).to_be_disabled()
    expect(botao).to_have_text("Já em andamento")

    # From here on the page must change by itself: a reload would lose the
    # marker, and the main frame must not navigate.
    pagina.evaluate("window.__semRecarregar = true")
    navegacoes: list[str] = []
    pagina.on(
        "framenavigated",
        lambda quadro: (
            navegacoes.append(quadro.url) if quadro == pagina.main_frame else None
        ),
    )
    consultas: list[str] = []
    pagina.on(
        "request",
        lambda pedido: (
            consultas.append(pedido.url)
            if pedido.url.endswith(f"/relatorios/jobs/{job_id}")
            else None
        ),
    )
    # (The sync API only delivers events while the test calls into it: wait
    # with Playwright, not with time.sleep.)
    with pagina.expect_response(
        lambda r: r.url.endswith(f"/relatorios/jobs/{job_id}"), timeout=ESPERA_MS
    ) as consulta:
        pass
    assert consulta.value.json()["status"] == "pendente"
    assert consulta.value.headers["retry-after"] == "2"
    expect(status).to_have_text("Na fila")
    expect(botao).to_be_disabled()

    cluster()
    expect(status).to_have_text("Pronto", timeout=ESPERA_MS)
    assert pagina.evaluate("window.__semRecarregar") is True
    assert navegacoes == []
    assert len(consultas) >= 2
    assert helpers.job(job_id).status == EstadoDoJob.PRONTO

    tabela = pagina.locator("[data-campo='resultado']")
    expect(tabela.locator("thead th")).to_have_text(
        ["Período", "Loja", "Nome da loja", "Vendas", "Quantidade", "Receita (R$)"]
    )
    expect(tabela.locator("tbody tr")).to_have_count(3)
    expect(tabela.locator("tbody tr").nth(1).locator("td")).to_have_text(
        ["01/2026", "L002", "Loja L002", "1", "3", "1.234,00"]
    )
    expect(tabela.locator("tfoot th")).to_have_text(
        ["Total", "", "", "3", "6", "1.354,75"]
    )
    expect(botao).to_have_count(0)  # nothing to request again while valid
    pagina.screenshot(path=str(pasta_saida / "pagina-do-job.png"), full_page=True)

    with pagina.expect_download() as baixando:
        pagina.locator("[data-campo='csv']").click()
    baixado = baixando.value
    assert baixado.suggested_filename == (
        f"vendas_2026-01-01_2026-02-28_job{job_id}.csv"
    )
    conteudo = Path(baixado.path()).read_bytes()
    assert conteudo.startswith(b"\xef\xbb\xbf")
    linhas = list(csv.reader(io.StringIO(conteudo.decode("utf-8-sig")), delimiter=";"))
    assert linhas == [
        ["Período", "Loja", "Nome da loja", "Vendas", "Quantidade", "Receita (R$)"],
        ["2026-01", "L001", "Loja L001", "1", "2", "100,50"],
        ["2026-01", "L002", "Loja L002", "1", "3", "1234,00"],
        ["2026-02", "L001", "Loja L001", "1", "1", "20,25"],
    ]

    # On a phone the page fits the screen; the table scrolls inside its box.
    pagina.set_viewport_size({"width": 390, "height": 844})
    assert pagina.evaluate("document.documentElement.scrollWidth") <= 390
    pagina.screenshot(
        path=str(pasta_saida / "pagina-do-job-celular.png"), full_page=True
    )
    contexto.close()

    alheio = navegador.new_context(locale="pt-BR")
    outra_pagina = alheio.new_page()
    entrar(outra_pagina, servidor, "bruno")
    resposta = outra_pagina.goto(f"{servidor}/painel/jobs/{job_id}/")
    assert resposta is not None
    assert resposta.status == 404
    expect(outra_pagina.locator("h1")).to_have_text("Página não encontrada")
    resposta = outra_pagina.goto(f"{servidor}/relatorios/jobs/{job_id}/resultado.csv")
    assert resposta is not None
    assert resposta.status == 404
    alheio.close()

    if os.environ.get("RELATORIOS_ATUALIZAR_CAPTURA"):
        # `RELATORIOS_ATUALIZAR_CAPTURA=1 make test` refreshes the README's image.
        shutil.copy(pasta_saida / "pagina-do-job.png", RAIZ / "docs/pagina-do-job.png")


def test_sem_javascript_recarregar_mostra_o_estado_atual(
    tenant: Tenant, servidor: str, navegador: Browser
) -> None:
    helpers.criar_lojas(tenant, "L001")
    gerente(tenant, "carla")
    contexto = navegador.new_context(java_script_enabled=False, locale="pt-BR")
    pagina = contexto.new_page()
    entrar(pagina, servidor, "carla")
    formulario = pagina.locator("#pedido-estoque")
    formulario.locator("input[name='estoque-inicio']").fill("2026-01-01")
    formulario.locator("input[name='estoque-fim']").fill("2026-01-31")
    formulario.locator("button[type=submit]").click()
    job_id = id_do_job(pagina)
    expect(pagina.locator("[data-campo='status']")).to_have_text("Na fila")
    expect(pagina.locator("[data-campo='botao']")).to_be_disabled()

    agora = timezone.now()
    resultado: dict[str, Any] = {
        "linhas": [
            {
                "loja": "L001",
                "loja_nome": "Loja L001",
                "sku": "SKU1",
                "produto": "Camiseta",
                "saldo_inicial": 10,
                "entradas": 5,
                "saidas": 2,
                "saldo_final": 13,
            }
        ],
        "totais": {"saldo_inicial": 10, "entradas": 5, "saidas": 2, "saldo_final": 13},
    }
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado=resultado,
        progresso=100,
        concluido_em=agora,
        expira_em=agora + timedelta(hours=1),
    )
    pagina.reload()
    expect(pagina.locator("[data-campo='status']")).to_have_text("Pronto")
    expect(pagina.locator("[data-campo='resultado'] tfoot th")).to_have_text(
        ["Total", "", "", "", "10", "5", "2", "13"]
    )
    contexto.close()
