"""The Content-Security-Policy holds in a real Chromium on every page.

Every page a manager, support or a client developer opens is loaded in
Debian's Chromium from the real web server; the browser reports each
violation of the policy (a `securitypolicyviolation` event and a console
error), and there must be none. A page whose script, styles or images the
policy refused would be broken for its users, and a policy loose enough to
let it through would not protect them.
"""

from __future__ import annotations

import http.cookiejar
import re
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.apps import apps
from django.conf import global_settings
from django.contrib import admin
from django.test import override_settings
from django.urls import reverse
from playwright.sync_api import Browser, BrowserContext, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from relatorios.jobs import pedidos, suporte
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant, Usuario, Webhook
from tests import helpers
from tests.paginas.test_navegador import (
    ESPERA_MS,
    SENHA,
    com_vendas,
    entrar,
    gerente,
    navegador,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

# Collects what the browser refuses, from before the page's first script runs.
VIGIA = """
window.__violacoes = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__violacoes.push(
    `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


class Visita:
    """A browser context that records every CSP complaint of every page."""

    def __init__(self, chromium: Browser, servidor: str) -> None:
        self.servidor = servidor
        self.contexto: BrowserContext = chromium.new_context(locale="pt-BR")
        self.contexto.add_init_script(VIGIA)
        self.pagina: Page = self.contexto.new_page()
        self.pagina.set_default_timeout(ESPERA_MS)
        self.queixas: list[str] = []
        self.pagina.on("console", self._console)
        self.vistas: list[tuple[str, int]] = []

    def _console(self, mensagem: Any) -> None:
        texto = mensagem.text
        if "Content Security Policy" in texto or "Refused to" in texto:
            self.queixas.append(f"{self.pagina.url}: {texto}")

    def ver(self, caminho: str) -> Page:
        resposta = self.pagina.goto(self.servidor + caminho, wait_until="load")
        assert resposta is not None
        # Scripts that run after load (the pages' polling, Swagger, Redoc)
        # have their moment to be refused.
        self.pagina.wait_for_timeout(300)
        self.vistas.append((caminho, resposta.status))
        if "content-security-policy" not in resposta.headers:
            self.queixas.append(f"{caminho}: sem Content-Security-Policy")
        for violacao in self.pagina.evaluate("window.__violacoes || []"):
            self.queixas.append(f"{caminho}: {violacao}")
        return self.pagina

    def fechar(self) -> None:
        self.contexto.close()


@pytest.fixture
def visitar(
    navegador: Browser,  # noqa: F811
    servidor: str,
) -> Iterator[Callable[[], Visita]]:
    abertas: list[Visita] = []

    def abrir() -> Visita:
        visita = Visita(navegador, servidor)
        abertas.append(visita)
        return visita

    yield abrir
    for visita in abertas:
        visita.fechar()


def jobs_em_cada_estado(tenant: Tenant, usuario: Usuario) -> dict[str, int]:
    """A job in each state the job page shows differently."""

    def pedir(inicio: str) -> int:
        return pedidos.submeter(
            tenant_id=tenant.pk,
            tipo="vendas",
            params_brutos={"inicio": inicio, "fim": "2026-01-31"},
            usuario_id=usuario.pk,
        ).job.id

    ids = {
        "pendente": pedir("2026-01-01"),
        "pronto": pedir("2026-01-02"),
        "falhou": pedir("2026-01-03"),
    }
    RelatorioJob.objects.filter(pk=ids["pronto"]).update(
        status=EstadoDoJob.PRONTO,
        resultado={
            "agrupar": "dia",
            "linhas": [
                {
                    "periodo": "2026-01-10",
                    "loja": "L001",
                    "loja_nome": "Loja 1",
                    "vendas": 2,
                    "quantidade": 3,
                    "receita": "100.50",
                }
            ],
            "totais": {"vendas": 2, "quantidade": 3, "receita": "100.50"},
        },
    )
    suporte.marcar_como_falhou(job_id=ids["falhou"], motivo="dados inconsistentes")
    return ids


def test_nenhuma_pagina_do_painel_viola_a_politica(
    tenant: Tenant, servidor: str, visitar: Callable[[], Visita]
) -> None:
    com_vendas(tenant)
    gerente(tenant, "ana")
    ana = Usuario.objects.get(username="ana")
    ids = jobs_em_cada_estado(tenant, ana)
    helpers.criar_agendamento(tenant, nome="Fechamento")
    # Straight to the table: registering would resolve the host, and this
    # machine has no DNS for it.
    Webhook.objects.create(
        tenant=tenant,
        url="https://exemplo.com.br/ganchos",
        segredo="whsec_" + "x" * 32,
        eventos=["job.pronto"],
    )
    visita = visitar()
    visita.ver("/entrar/")
    entrar(visita.pagina, servidor, "ana")
    for caminho in (
        "/painel/",
        *(f"/painel/jobs/{n}/" for n in ids.values()),
        "/painel/agendamentos/",
        "/painel/webhooks/",
        "/painel/jobs/999999/",  # the 404 page
    ):
        visita.ver(caminho)

    assert visita.queixas == []
    assert [s for _, s in visita.vistas] == [200] * 7 + [404]


def test_nenhuma_tela_do_admin_viola_a_politica(
    tenant: Tenant, servidor: str, visitar: Callable[[], Visita]
) -> None:
    gerente(tenant, "ana")
    com_vendas(tenant)
    jobs_em_cada_estado(tenant, Usuario.objects.get(username="ana"))
    helpers.criar_agendamento(tenant, nome="Fechamento")
    # Straight to the table: registering would resolve the host, and this
    # machine has no DNS for it.
    Webhook.objects.create(
        tenant=tenant,
        url="https://exemplo.com.br/ganchos",
        segredo="whsec_" + "x" * 32,
        eventos=["job.pronto"],
    )
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        Usuario.objects.create_superuser("raiz", "", SENHA)
    visita = visitar()
    pagina = visita.ver("/admin/login/")
    pagina.fill("#id_username", "raiz")
    pagina.fill("#id_password", SENHA)
    pagina.click("input[type=submit]")
    caminhos = ["/admin/"]
    for modelo in apps.get_models():
        if not admin.site.is_registered(modelo):
            continue
        rotulo = f"admin:{modelo._meta.app_label}_{modelo._meta.model_name}"
        caminhos.append(reverse(f"{rotulo}_changelist"))
        primeiro = modelo._default_manager.order_by("pk").first()
        if primeiro is not None:
            caminhos.append(reverse(f"{rotulo}_change", args=[primeiro.pk]))
        caminhos.append(reverse(f"{rotulo}_add"))
    for caminho in caminhos:
        visita.ver(caminho)

    assert visita.queixas == []
    assert len(caminhos) > 20
    assert {s for _, s in visita.vistas} <= {200, 403}


LOGO_DO_REDOC = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def desenhou(pagina: Page, seletor: str) -> bool:
    try:
        pagina.wait_for_selector(seletor, timeout=ESPERA_MS)
    except PlaywrightTimeout:
        return False
    return True


def test_as_paginas_da_documentacao_da_api_nao_violam_a_politica(
    visitar: Callable[[], Visita],
) -> None:
    visita = visitar()
    # Drawn: the operations listed, which needs their scripts and the schema.
    swagger = desenhou(visita.ver("/api/docs/"), ".opblock")
    redoc = desenhou(visita.ver("/api/redoc/"), "[data-section-id]")

    # Redoc's footer always asks cdn.redoc.ly for its logo (its bundle has the
    # URL built in, with no option to leave it out): refusing a CDN is the
    # policy working, and the only refusal allowed here.
    outras = [q for q in visita.queixas if LOGO_DO_REDOC not in q]

    assert outras == []
    assert (swagger, redoc) == (True, True)
    assert [s for _, s in visita.vistas] == [200, 200]


def test_a_vigia_ve_uma_violacao(
    tenant: Tenant, servidor: str, visitar: Callable[[], Visita]
) -> None:
    visita = visitar()
    pagina = visita.ver("/entrar/")
    # What an injection would do: the policy refuses it, and the test sees it.
    pagina.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.__executou = 1'; document.body.append(s); }"
    )
    pagina.wait_for_timeout(200)
    queixas = pagina.evaluate("window.__violacoes")

    assert pagina.evaluate("window.__executou") is None
    assert any("script-src" in q for q in queixas)


def test_cabecalhos_das_paginas(tenant: Tenant, servidor: str) -> None:
    gerente(tenant, "ana")
    abridor = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    with abridor.open(f"{servidor}/entrar/") as resposta:
        corpo = resposta.read().decode()
        politica = resposta.headers["Content-Security-Policy"]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', corpo)
    assert token is not None
    dados = (
        f"username=ana&password={SENHA}&csrfmiddlewaretoken={token.group(1)}"
    ).encode()
    with abridor.open(f"{servidor}/entrar/", data=dados) as resposta:
        painel = resposta.headers
    caches = []
    for caminho in ("/painel/agendamentos/", "/painel/webhooks/"):
        with abridor.open(servidor + caminho) as resposta:
            caches.append(resposta.headers["Cache-Control"])

    diretivas = dict(d.strip().split(" ", 1) for d in politica.split(";"))
    assert diretivas == {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self' data:",
        "font-src": "'self'",
        "connect-src": "'self'",
        "object-src": "'none'",
        "base-uri": "'none'",
        "frame-ancestors": "'none'",
        "form-action": "'self'",
    }
    assert painel["Content-Security-Policy"] == politica
    for valor in [painel["Cache-Control"], *caches]:
        assert {"private", "no-store"} <= {d.strip() for d in valor.split(",")}


@pytest.mark.parametrize(("aceita", "excluido"), [(False, False), (True, True)])
def test_excluir_agendamento_pergunta_antes_sem_script_inline(
    aceita: bool,
    excluido: bool,
    tenant: Tenant,
    servidor: str,
    visitar: Callable[[], Visita],
) -> None:
    gerente(tenant, "ana")
    agendamento = helpers.criar_agendamento(tenant, nome="Fechamento")
    visita = visitar()
    entrar(visita.pagina, servidor, "ana")
    pagina = visita.ver("/painel/agendamentos/")
    perguntas: list[str] = []

    def responder(dialogo: Any) -> None:
        perguntas.append(dialogo.message)
        dialogo.accept() if aceita else dialogo.dismiss()

    pagina.on("dialog", responder)
    pagina.click("form[data-confirmar] button[type=submit]")
    pagina.wait_for_load_state("load")
    pagina.wait_for_timeout(500)
    agendamento.refresh_from_db()

    assert perguntas == [
        "Excluir este agendamento? Ele não dispara mais; o histórico fica."
    ]
    assert (agendamento.excluido_em is not None) is excluido
    assert visita.queixas == []
