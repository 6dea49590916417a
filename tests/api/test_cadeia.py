"""The API's shorter middleware chain (relatorios/api/cadeia.py) answers token
calls exactly as Django's full chain does, and everything else takes the full
chain. In-process, through the real WSGI handlers and PostgreSQL."""

from __future__ import annotations

import io
import json
import re
import sys
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client

from relatorios.api.cadeia import HandlerWsgi
from relatorios.jobs import pedidos
from relatorios.models import Tenant
from tests import helpers

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sem_fechar_conexoes")]

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31"}
# Headers that differ between two answers to the same request by nature.
VARIAVEIS = {"Date"}


def chamar(
    handler: Any, metodo: str, caminho: str, corpo: bytes = b"", **cabecalhos: str
) -> tuple[str, dict[str, str], bytes]:
    caminho, _, consulta = caminho.partition("?")
    environ = {
        "REQUEST_METHOD": metodo,
        "PATH_INFO": caminho,
        "QUERY_STRING": consulta,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "REMOTE_ADDR": "127.0.0.1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(corpo),
        "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(corpo)),
        "CONTENT_TYPE": "application/json" if corpo else "",
        "HTTP_X_REQUEST_ID": "pedido-de-teste-1",
        **cabecalhos,
    }
    resultado: dict[str, Any] = {}

    def start_response(status: str, headers: Any, exc_info: Any = None) -> None:
        resultado["status"] = status
        resultado["headers"] = {k: v for k, v in headers if k not in VARIAVEIS}

    resposta = handler(environ, start_response)
    try:
        conteudo = b"".join(resposta)
    finally:
        resposta.close()
    return resultado["status"], resultado["headers"], conteudo


@pytest.fixture
def sem_fechar_conexoes() -> Any:
    """What Django's test client does around its handler: the test's
    transaction lives on the connection the requests would close."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


class Contador:
    def __init__(self, handler: HandlerWsgi) -> None:
        self.vezes = 0
        original = handler.cadeia_da_api.get_response

        def contar(request: Any) -> Any:
            self.vezes += 1
            return original(request)

        handler.cadeia_da_api.get_response = contar  # type: ignore[method-assign]


def test_chamadas_por_token_respondem_igual_pela_cadeia_curta(tenant: Tenant) -> None:
    _, token = helpers.criar_usuario(tenant)
    outro = helpers.criar_tenant("Rede B")
    alheio = pedidos.submeter(
        tenant_id=outro.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id
    completa, curta = WSGIHandler(), HandlerWsgi()
    contador = Contador(curta)
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    corpo = json.dumps(PEDIDO).encode()
    primeiro = chamar(completa, "POST", "/relatorios/vendas", corpo, **auth)
    assert primeiro[0].startswith("202")
    job_id = json.loads(primeiro[2])["id"]

    casos: list[tuple[str, str, bytes, dict[str, str]]] = [
        ("POST", "/relatorios/vendas", corpo, auth),  # the dedup hit
        ("POST", "/relatorios/vendas", b'{"inicio": "ontem"}', auth),
        ("POST", "/relatorios/vendas", b"[1, 2", auth),
        ("POST", "/relatorios/naoexiste", corpo, auth),
        ("GET", f"/relatorios/jobs/{job_id}", b"", auth),
        ("GET", f"/relatorios/jobs/{job_id}/", b"", auth),
        ("GET", f"/relatorios/jobs/{alheio}", b"", auth),
        ("GET", f"/relatorios/jobs/{job_id}/resultado.csv", b"", auth),
        ("GET", f"/relatorios/jobs/{job_id}", b"", {**auth, "HTTP_ACCEPT": "x/y"}),
        ("GET", f"/relatorios/jobs/{job_id}?format=json", b"", auth),
        ("DELETE", f"/relatorios/jobs/{job_id}", b"", auth),
        ("GET", "/relatorios/jobs/abc", b"", auth),
        ("GET", "/relatorios/alertas", b"", auth),
        ("GET", "/relatorios/agendamentos", b"", auth),
        ("GET", f"/relatorios/jobs/{job_id}", b"", {"HTTP_AUTHORIZATION": "Token x"}),
        ("GET", f"/relatorios/jobs/{job_id}", b"", {"HTTP_AUTHORIZATION": "Token"}),
        ("GET", f"/relatorios/jobs/{job_id}", b"", {"HTTP_AUTHORIZATION": "token a b"}),
        # What the API chain's one middleware does in the seven's place.
        ("GET", f"/relatorios/jobs/{job_id}?x=%00", b"", auth),
        ("GET", f"/relatorios/jobs/{job_id}?x=%ED%A0%80", b"", auth),
        ("GET", f"/relatorios/jobs/{job_id}?" + "&".join(["a=1"] * 1001), b"", auth),
        ("POST", "/relatorios/vendas", corpo, {**auth, "CONTENT_LENGTH": "9" * 12}),
        ("POST", "/relatorios/vendas", corpo, {**auth, "CONTENT_LENGTH": "-3"}),
        (
            "GET",
            f"/relatorios/jobs/{job_id}",
            b"",
            {**auth, "HTTP_HOST": "mau.example"},
        ),
        ("GET", "/relatorios/jobs/1/nada", b"", auth),
    ]
    for metodo, caminho, dados, cabecalhos in casos:
        esperado = chamar(completa, metodo, caminho, dados, **cabecalhos)
        obtido = chamar(curta, metodo, caminho, dados, **cabecalhos)
        assert obtido == esperado, (metodo, caminho, cabecalhos)
    assert contador.vezes == len(casos)
    codigos = {chamar(curta, m, c, d, **h)[0][:3] for m, c, d, h in casos}
    assert codigos >= {"200", "202", "400", "401", "404", "405", "406", "409", "413"}
    # An implausible request id is replaced by a new one (random: not compared).
    status, cabecalhos, _ = chamar(
        curta, "GET", f"/relatorios/jobs/{job_id}", HTTP_X_REQUEST_ID="<>", **auth
    )
    assert status.startswith("200")
    assert re.fullmatch(r"[0-9a-f]{32}", cabecalhos["X-Request-ID"])


def test_o_resto_passa_pela_cadeia_completa(tenant: Tenant) -> None:
    usuario, token = helpers.criar_usuario(tenant)
    job_id = pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id
    navegador = Client()
    navegador.force_login(usuario)
    sessao = {"HTTP_COOKIE": f"sessionid={navegador.cookies['sessionid'].value}"}
    curta = HandlerWsgi()
    contador = Contador(curta)

    # The manager's page polls the status with its session: authenticated
    # by the session middleware, which only the full chain has.
    status, _, corpo = chamar(curta, "GET", f"/relatorios/jobs/{job_id}", **sessao)
    assert status.startswith("200")
    assert json.loads(corpo)["id"] == job_id
    # No credentials, another scheme, or a token outside the API's space.
    assert chamar(curta, "GET", f"/relatorios/jobs/{job_id}")[0].startswith("401")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert chamar(curta, "GET", f"/relatorios/jobs/{job_id}", **bearer)[0][:3] == "401"
    token_na_pagina = {"HTTP_AUTHORIZATION": f"Token {token}", **sessao}
    assert chamar(curta, "GET", "/painel/", **token_na_pagina)[0].startswith("200")
    assert contador.vezes == 0


def test_o_middleware_da_api_e_a_cadeia_completa_sem_os_do_navegador() -> None:
    """A middleware added to MIDDLEWARE must be placed in the API's one too
    (or among the browser's): the two chains must not drift apart."""
    from django.conf import settings

    from relatorios.api.cadeia import MiddlewareDaApi

    sem_navegador = [
        m for m in settings.MIDDLEWARE if m not in settings.MIDDLEWARE_SO_DO_NAVEGADOR
    ]
    assert sem_navegador == list(MiddlewareDaApi.SUBSTITUI)
    assert settings.MIDDLEWARE_DA_API == ["relatorios.api.cadeia.MiddlewareDaApi"]
