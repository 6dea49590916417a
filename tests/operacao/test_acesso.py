"""The client's address: who reads /metrics, whose logins are locked, what the
access log says, over real HTTP to the real web server.

Every test client here connects from a loopback address of its own (Linux
routes all of 127.0.0.0/8 to lo), so "a proxy", "an outside client" and "the
scraper" are told apart by their socket's address, as on a real network.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import subprocess
import sys
from email.message import Message
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import global_settings
from django.test import override_settings

from relatorios.models import Tenant
from relatorios.operacao import acesso
from tests import helpers, processos

SENHA = "senha-de-teste-123"
# The proxy in front, the scraper on the host, and an outsider that reaches the
# server's port directly.
PROXY = "127.0.0.1"
OUTSIDER = "127.0.0.2"
OUTRO_PROXY = "127.0.0.3"


def pedir(
    url: str,
    caminho: str,
    *,
    origem: str,
    metodo: str = "GET",
    cabecalhos: dict[str, str] | None = None,
    corpo: bytes | None = None,
) -> tuple[int, Message, bytes]:
    """One real HTTP request whose socket is bound to `origem`."""
    partes = urlsplit(url)
    conexao = http.client.HTTPConnection(
        partes.hostname or "", partes.port, timeout=60, source_address=(origem, 0)
    )
    try:
        conexao.request(metodo, caminho, body=corpo, headers=cabecalhos or {})
        resposta = conexao.getresponse()
        return resposta.status, resposta.headers, resposta.read()
    finally:
        conexao.close()


def metricas(url: str, *, origem: str, encaminhado: str | None = None) -> int:
    cabecalhos = {} if encaminhado is None else {"X-Forwarded-For": encaminhado}
    return pedir(url, "/metrics", origem=origem, cabecalhos=cabecalhos)[0]


def entrar(url: str, usuario: str, senha: str, *, origem: str, encaminhado: str) -> int:
    """A login at /entrar/ (its form first, for the CSRF token); the POST's status."""
    com_cliente = {"X-Forwarded-For": encaminhado}
    _, cabecalhos, corpo = pedir(url, "/entrar/", origem=origem, cabecalhos=com_cliente)
    cookie = next(
        valor.split(";", 1)[0]
        for valor in cabecalhos.get_all("Set-Cookie") or []
        if valor.startswith("csrftoken=")
    )
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', corpo)
    assert token is not None
    formulario = {
        "username": usuario,
        "password": senha,
        "csrfmiddlewaretoken": token.group(1).decode(),
    }
    return pedir(
        url,
        "/entrar/",
        origem=origem,
        metodo="POST",
        cabecalhos={
            **com_cliente,
            "Cookie": cookie,
            "Content-Type": "application/x-www-form-urlencoded",
        },
        corpo=urlencode(formulario).encode(),
    )[0]


def gerente(tenant: Tenant, usuario: str) -> None:
    # The test session hashes with MD5; the web server checks with the
    # project's hashers.
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        helpers.criar_usuario(tenant, username=usuario, password=SENHA)


def linhas_de_acesso(texto: str) -> list[dict[str, object]]:
    linhas = [json.loads(li) for li in texto.splitlines() if li.startswith("{")]
    return [linha for linha in linhas if linha.get("evento") == "acesso"]


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_atras_de_proxy_o_cliente_e_quem_o_proxy_nomeia(
    tenant: Tenant, pasta_saida: Path
) -> None:
    gerente(tenant, "ana")
    (pasta_saida / "web.log").unlink(missing_ok=True)
    web, url = processos.iniciar_web(
        pasta_saida / "web.log",
        WEB_ACCESSLOG="-",
        LOG_FORMAT="json",
        RELATORIOS_PROXIES_CONFIAVEIS=f"{PROXY}/32",
        RELATORIOS_METRICAS_REDES="127.0.0.0/8,10.0.0.0/8",
        RELATORIOS_LOGIN_FALHAS="3",
    )
    try:
        # /metrics: the client the proxy names decides, never the proxy itself.
        de_fora = metricas(url, origem=PROXY, encaminhado="192.0.2.10")
        de_fora_fingindo = metricas(
            url, origem=PROXY, encaminhado="127.0.0.1, 192.0.2.10"
        )
        sem_cliente = metricas(url, origem=PROXY)
        de_dentro = metricas(url, origem=PROXY, encaminhado="10.1.2.3")
        # The lockout: a guesser behind the proxy locks out itself, not everyone.
        falhas = [
            entrar(url, "ana", "errada", origem=PROXY, encaminhado="203.0.113.7")
            for _ in range(3)
        ]
        guesser = entrar(url, "ana", SENHA, origem=PROXY, encaminhado="203.0.113.7")
        ana = entrar(url, "ana", SENHA, origem=PROXY, encaminhado="198.51.100.20")
    finally:
        web.parar()

    assert (de_fora, de_fora_fingindo, sem_cliente, de_dentro) == (403, 403, 403, 200)
    assert falhas == [200, 200, 429]  # the third one locks
    assert (guesser, ana) == (429, 302)
    # The access log names the client, not the proxy.
    entradas = [
        linha
        for linha in linhas_de_acesso(web.texto_do_log())
        if linha["caminho"] == "/entrar/" and linha["metodo"] == "POST"
    ]
    assert [linha["remoto"] for linha in entradas] == [
        *["203.0.113.7"] * 4,
        "198.51.100.20",
    ]


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_x_forwarded_for_de_quem_nao_e_proxy_nao_vale(
    tenant: Tenant, pasta_saida: Path
) -> None:
    gerente(tenant, "carla")
    (pasta_saida / "web.log").unlink(missing_ok=True)
    web, url = processos.iniciar_web(
        pasta_saida / "web.log",
        WEB_ACCESSLOG="-",
        LOG_FORMAT="json",
        # The deployment is behind a proxy elsewhere; the outsider reaches the
        # server's port directly and writes the header itself.
        RELATORIOS_PROXIES_CONFIAVEIS=f"{OUTRO_PROXY}/32",
        RELATORIOS_METRICAS_REDES="127.0.0.1/32",
        RELATORIOS_LOGIN_FALHAS="3",
    )
    try:
        fingindo_local = metricas(url, origem=OUTSIDER, encaminhado="127.0.0.1")
        fingindo_outro = metricas(url, origem=OUTSIDER, encaminhado="8.8.8.8")
        scraper = metricas(url, origem=PROXY)
        # A new made-up address per attempt does not reset the count.
        falhas = [
            entrar(
                url, "carla", "errada", origem=OUTSIDER, encaminhado=f"203.0.113.{n}"
            )
            for n in range(1, 4)
        ]
        depois = entrar(url, "carla", SENHA, origem=OUTSIDER, encaminhado="203.0.113.9")
    finally:
        web.parar()

    assert (fingindo_local, fingindo_outro, scraper) == (403, 403, 200)
    assert falhas == [200, 200, 429]  # the third one locks
    assert depois == 429
    posts = [
        linha["remoto"]
        for linha in linhas_de_acesso(web.texto_do_log())
        if linha["caminho"] == "/entrar/" and linha["metodo"] == "POST"
    ]
    assert posts == [OUTSIDER] * 4


@pytest.mark.parametrize(
    ("remoto", "encaminhado", "esperado"),
    [
        # No proxy in front of this peer: the socket's address, headers aside.
        ("203.0.113.5", None, ("203.0.113.5", True)),
        ("203.0.113.5", "127.0.0.1", ("203.0.113.5", False)),
        ("10.0.0.9", "198.51.100.1", ("10.0.0.9", False)),
        # Our proxy: the rightmost entry that is not one of ours.
        ("10.0.0.1", "198.51.100.1", ("198.51.100.1", True)),
        ("10.0.0.1", "127.0.0.1, 198.51.100.1", ("198.51.100.1", True)),
        ("10.0.0.1", " 198.51.100.1 ,10.0.0.2", ("198.51.100.1", True)),
        ("10.0.0.1", "198.51.100.1, 10.0.0.2, 10.0.0.3", ("198.51.100.1", True)),
        ("10.0.0.1", "2001:db8::9", ("2001:db8::9", True)),
        ("::ffff:10.0.0.1", "198.51.100.1", ("198.51.100.1", True)),
        # Nobody but our proxies: no client was named.
        ("10.0.0.1", None, ("10.0.0.1", False)),
        ("10.0.0.1", "", ("10.0.0.1", False)),
        ("10.0.0.1", "10.0.0.2", ("10.0.0.2", False)),
        # Junk stops the walk: what is left of it nobody we trust wrote.
        ("10.0.0.1", "198.51.100.1, unknown", ("10.0.0.1", False)),
        ("10.0.0.1", "198.51.100.1, 10.0.0.2:443", ("10.0.0.1", False)),
        ("10.0.0.1", "198.51.100.1,, 10.0.0.2", ("10.0.0.2", False)),
        (None, "198.51.100.1", (None, False)),
    ],
)
def test_cliente_atras_dos_proxies_confiaveis(
    remoto: str | None,
    encaminhado: str | None,
    esperado: tuple[str | None, bool],
    settings: object,
) -> None:
    settings.RELATORIOS_PROXIES_CONFIAVEIS = ["10.0.0.0/29"]  # type: ignore[attr-defined]
    meta = {"REMOTE_ADDR": remoto}
    if encaminhado is not None:
        meta["HTTP_X_FORWARDED_FOR"] = encaminhado

    visto = acesso.cliente(meta)

    assert (visto.endereco, visto.identificado) == esperado


def test_sem_proxies_confiaveis_o_cabecalho_nao_conta(settings: object) -> None:
    settings.RELATORIOS_PROXIES_CONFIAVEIS = []  # type: ignore[attr-defined]

    visto = acesso.cliente(
        {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "198.51.100.1"}
    )

    assert (visto.endereco, visto.identificado) == ("127.0.0.1", False)


@pytest.mark.parametrize(
    ("ambiente", "mensagem"),
    [
        ({"RELATORIOS_PROXIES_CONFIAVEIS": "10.0.0.1/33"}, "is not a network"),
        ({"RELATORIOS_PROXIES_A_FRENTE": "1"}, "RELATORIOS_PROXIES_A_FRENTE is gone"),
    ],
)
def test_configuracao_de_proxies_invalida_nao_sobe(
    ambiente: dict[str, str], mensagem: str
) -> None:
    resultado = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=processos.RAIZ,
        env={**os.environ, **ambiente},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert resultado.returncode != 0
    assert mensagem in resultado.stderr


def test_proxy_desconhecido_e_avisado_uma_vez(
    settings: object, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.RELATORIOS_PROXIES_CONFIAVEIS = []  # type: ignore[attr-defined]
    monkeypatch.setattr(acesso._Aviso, "dado", False)
    encaminhado = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "198.51.100.1"}

    with caplog.at_level(logging.WARNING, logger="relatorios.operacao.acesso"):
        acesso.cliente({"REMOTE_ADDR": "127.0.0.1"})
        acesso.cliente(encaminhado)
        acesso.cliente({**encaminhado, "REMOTE_ADDR": "127.0.0.5"})

    avisos = [r for r in caplog.records if r.name == "relatorios.operacao.acesso"]
    assert [(r.evento, r.remoto) for r in avisos] == [  # type: ignore[attr-defined]
        ("proxy_desconhecido", "127.0.0.1")
    ]
