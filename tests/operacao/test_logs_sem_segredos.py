from __future__ import annotations

import email
import email.header
import http.cookiejar
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import global_settings
from django.test import override_settings

from relatorios.models import EstadoDoJob, RelatorioJob, Tenant, Usuario
from relatorios.notificacoes import links
from tests import helpers, processos
from tests.notificacoes.test_notificacoes import Receptor
from tests.operacao.test_logs import receptor  # noqa: F401 (a fixture)
from tests.operacao.test_metricas import TOKEN_DAS_METRICAS, com_vendas

SENHA_DO_GERENTE = "senha-do-gerente-9c1e-segredo"
SENHA_ERRADA = "palpite-errado-4d2b-segredo"
SENHA_DO_ADMIN = "senha-do-admin-77aa-segredo"


class Navegador:
    """A client with cookies, like a browser: forms with their CSRF token."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.cookies = http.cookiejar.CookieJar()
        self.abridor = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies),
            _SemRedirecionar(),
        )

    def pedir(
        self,
        caminho: str,
        *,
        metodo: str = "GET",
        corpo: bytes | None = None,
        cabecalhos: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        pedido = urllib.request.Request(
            self.url + caminho, data=corpo, method=metodo, headers=cabecalhos or {}
        )
        try:
            with self.abridor.open(pedido, timeout=60) as resposta:
                return resposta.status, resposta.read()
        except urllib.error.HTTPError as erro:
            return erro.code, erro.read()

    def enviar(self, caminho: str, campos: dict[str, str]) -> int:
        """GET the form, then POST it with the page's CSRF token."""
        _, pagina = self.pedir(caminho)
        achado = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', pagina)
        assert achado is not None, caminho
        corpo = urlencode(campos | {"csrfmiddlewaretoken": achado.group(1).decode()})
        return self.pedir(
            caminho,
            metodo="POST",
            corpo=corpo.encode(),
            cabecalhos={
                "Content-Type": "application/x-www-form-urlencoded",
                "Referer": self.url + caminho,
            },
        )[0]

    def valores_dos_cookies(self) -> list[str]:
        return [c.value for c in self.cookies if c.value]


class _SemRedirecionar(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None


def api(url: str, token: str, metodo: str, caminho: str, dados: Any = None) -> Any:
    corpo = None if dados is None else json.dumps(dados).encode()
    return processos.requisitar(metodo, url + caminho, token=token, corpo=corpo)


def linhas_dos_emails(pasta: Path) -> list[str]:
    """Subjects and body lines of every email the file backend wrote."""
    linhas: list[str] = []
    for arquivo in sorted(pasta.glob("*.log")):
        for bruto in arquivo.read_bytes().split(b"-" * 79):
            if not bruto.strip():
                continue
            mensagem: Message = email.message_from_bytes(bruto.strip())
            linhas.append(
                str(
                    email.header.make_header(
                        email.header.decode_header(mensagem["Subject"])
                    )
                )
            )
            for parte in mensagem.walk():
                if parte.get_content_maintype() != "text":
                    continue
                conjunto = parte.get_content_charset() or "utf-8"
                texto = parte.get_payload(decode=True).decode(conjunto)
                linhas += [li.strip() for li in texto.splitlines() if li.strip()]
    return linhas


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_nenhum_token_senha_segredo_ou_email_chega_aos_logs_em_nivel_algum(
    tenant: Tenant,
    receptor: Receptor,  # noqa: F811
    cluster: Callable[..., processos.Processo],
    ajustes: Callable[..., None],
    pasta_saida: Path,
) -> None:
    emails = pasta_saida / "emails"
    for anterior in [*pasta_saida.glob("*.log"), *emails.glob("*")]:
        anterior.unlink()  # the processes append: only this run's lines
    # The most talkative configuration there is: every logger at DEBUG, and
    # Django's debug mode (which logs each SQL statement with its parameters).
    ajustes(
        LOG_FORMAT="json",
        LOG_LEVEL="DEBUG",
        Q_LOG_LEVEL="DEBUG",
        RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True,
        RELATORIOS_METRICAS_TOKEN=TOKEN_DAS_METRICAS,
        EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
        EMAIL_FILE_PATH=emails,
    )
    com_vendas(tenant)
    # The servers check passwords with the project's hashers, not the tests' MD5.
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        _, token = helpers.criar_usuario(
            tenant, username="ana", password=SENHA_DO_GERENTE, email="ana@rede-a.test"
        )
        Usuario.objects.create_superuser(
            username="raiz", password=SENHA_DO_ADMIN, email="raiz@suporte.test"
        )
    trabalhador = cluster(DJANGO_DEBUG="1")
    web, url = processos.iniciar_web(
        pasta_saida / "web.log", WEB_ACCESSLOG="-", DJANGO_DEBUG="1"
    )
    gerente, suporte = Navegador(url), Navegador(url)
    try:
        criado = api(
            url,
            token,
            "POST",
            "/relatorios/webhooks",
            {"url": receptor.url, "eventos": ["job.pronto"]},
        )
        segredo = criado[2]["segredo"]
        submetido = api(
            url,
            token,
            "POST",
            "/relatorios/vendas",
            {"inicio": "2026-01-01", "fim": "2026-01-31", "notificar_email": True},
        )
        job = RelatorioJob.objects.get(tenant=tenant)
        helpers.esperar(
            lambda: helpers.job(job.pk).status == EstadoDoJob.PRONTO,
            descricao="o job ficar pronto",
        )
        helpers.esperar(lambda: receptor.recebidas, descricao="o webhook chegar")
        helpers.esperar(lambda: linhas_dos_emails(emails), descricao="o e-mail")
        api(url, token, "GET", f"/relatorios/jobs/{job.pk}")
        errado = gerente.enviar(
            "/entrar/", {"username": "ana", "password": SENHA_ERRADA}
        )
        certo = gerente.enviar(
            "/entrar/", {"username": "ana", "password": SENHA_DO_GERENTE}
        )
        painel = gerente.pedir(f"/painel/jobs/{job.pk}/")[0]
        admin = suporte.enviar(
            "/admin/login/", {"username": "raiz", "password": SENHA_DO_ADMIN}
        )
        gancho = suporte.pedir(f"/admin/relatorios/webhook/{criado[2]['id']}/change/")
        metricas = gerente.pedir(
            "/metrics", cabecalhos={"Authorization": f"Bearer {TOKEN_DAS_METRICAS}"}
        )[0]
        # A scheduled report's link, as its recipient (no session) and as a
        # mail scanner checking it (HEAD, POST) would open it.
        job = helpers.job(job.pk)
        assert job.concluido_em is not None
        baixar = "/baixar/" + links.assinar(
            job_id=job.pk, tenant_id=tenant.pk, concluido_em=job.concluido_em
        )
        anonimo = Navegador(url)
        download = [
            anonimo.pedir(baixar, metodo=metodo, corpo=corpo)[0]
            for metodo, corpo in (("GET", None), ("HEAD", None), ("POST", b""))
        ]
    finally:
        web.parar()
        trabalhador.parar()

    assert (criado[0], submetido[0]) == (201, 202)
    assert (errado, certo, painel, admin, gancho[0], metricas) == (
        200,
        302,
        200,
        302,
        200,
        200,
    )
    assert download == [200, 405, 403]
    logs = web.texto_do_log() + trabalhador.texto_do_log()
    # The run did log at DEBUG, SQL included: the check below has something
    # to look at.
    assert '"nivel": "DEBUG"' in logs
    segredos = {
        "o token da API": token,
        "o segredo do webhook": segredo,
        "a chave do segredo do webhook": segredo.removeprefix("whsec_"),
        "a assinatura do webhook": receptor.recebidas[0][0]["webhook-signature"],
        "a senha do gerente": SENHA_DO_GERENTE,
        "a senha errada": SENHA_ERRADA,
        "a senha do admin": SENHA_DO_ADMIN,
        "o token das métricas": TOKEN_DAS_METRICAS,
        "a SECRET_KEY": processos.CHAVE_DE_TESTE,
        "o token do link de download": baixar.removeprefix("/baixar/"),
        **{
            f"o cookie {n}": valor
            for n, valor in enumerate(
                gerente.valores_dos_cookies() + suporte.valores_dos_cookies()
            )
        },
        **{
            f"a linha do e-mail {linha!r}": linha
            for linha in linhas_dos_emails(emails)
            if len(linha) >= 20
        },
    }
    vazados = [nome for nome, valor in segredos.items() if valor in logs]
    assert vazados == []
