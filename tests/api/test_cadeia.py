"""The API's chain (relatorios/api/cadeia.py), the one MIDDLEWARE list without
the browser's middlewares, answers token calls exactly as Django's full chain
does, and everything else takes the full chain. In-process, through the real
WSGI handlers and PostgreSQL."""

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

from relatorios.api import cadeia
from relatorios.api.cadeia import HandlerWsgi, so_do_navegador
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
        # What the middlewares the API's chain keeps do.
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


class Sonda:
    """A middleware added at the end of the list: what it saw of each call."""

    vistas: list[tuple[str, bool]] = []

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        Sonda.vistas.append((type(self).__name__, hasattr(request, "session")))
        return self.get_response(request)


class SondaDoNavegador(Sonda):
    pass


SondaSoDoNavegador = so_do_navegador(SondaDoNavegador)


def test_um_middleware_novo_vale_para_as_duas_cadeias_salvo_o_do_navegador(
    tenant: Tenant, settings: Any
) -> None:
    _, token = helpers.criar_usuario(tenant)
    job_id = pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id
    settings.MIDDLEWARE = [
        *settings.MIDDLEWARE,
        "tests.api.test_cadeia.Sonda",
        "tests.api.test_cadeia.SondaSoDoNavegador",
    ]
    handler = HandlerWsgi()
    Sonda.vistas.clear()

    por_token = chamar(
        handler,
        "GET",
        f"/relatorios/jobs/{job_id}",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    vistas_por_token = list(Sonda.vistas)
    Sonda.vistas.clear()
    sem_credencial = chamar(handler, "GET", f"/relatorios/jobs/{job_id}")

    assert por_token[0].startswith("200")
    assert sem_credencial[0].startswith("401")
    # The token call: the new middleware, without the browser's (no session).
    assert vistas_por_token == [("Sonda", False)]
    assert Sonda.vistas == [("Sonda", True), ("SondaDoNavegador", True)]


def test_os_do_navegador_sao_os_reais_e_o_do_axes_e_o_ultimo() -> None:
    from axes.middleware import AxesMiddleware
    from django.conf import settings
    from django.contrib.sessions.middleware import SessionMiddleware
    from django.utils.module_loading import import_string

    do_navegador = [
        import_string(m) for m in settings.MIDDLEWARE if m.startswith(cadeia.__name__)
    ]

    assert len(do_navegador) == 8
    assert all(c.__mro__[1].__name__ == c.__name__ for c in do_navegador)
    # django-axes' own check looks for its exact name (silenced in settings).
    assert issubclass(import_string(settings.MIDDLEWARE[-1]), AxesMiddleware)
    assert issubclass(cadeia.SessionMiddleware, SessionMiddleware)


def test_sem_o_csrf_ou_o_axes_na_lista_o_aviso_aparece(settings: Any) -> None:
    assert cadeia.verificar_middlewares() == []

    settings.MIDDLEWARE = [
        m
        for m in settings.MIDDLEWARE
        if m not in {"relatorios.api.cadeia.CsrfViewMiddleware"}
    ]
    avisos = cadeia.verificar_middlewares()

    assert [a.id for a in avisos] == ["relatorios.W009"]
    assert "CsrfViewMiddleware" in avisos[0].msg
    assert "security.W003" in avisos[0].hint
