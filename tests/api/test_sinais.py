"""Without the request_started receivers the web server drops
(`cadeia.sinais_do_servidor`), connections are still reused, replaced when
dead and closed when aged: through the real WSGI handler and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection, reset_queries

from relatorios.api.cadeia import HandlerWsgi, sinais_do_servidor
from tests import helpers
from tests.api.test_cadeia import chamar

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sinais_do_servidor_ligados() -> Iterator[None]:
    sinais_do_servidor()
    try:
        yield
    finally:
        request_started.connect(reset_queries)
        request_started.connect(close_old_connections)


def test_so_os_receptores_de_custo_puro_saem(sinais_do_servidor_ligados: None) -> None:
    # The finish keeps closing what must be closed.
    assert close_old_connections in _receptores(request_finished)
    assert close_old_connections not in _receptores(request_started)
    assert reset_queries not in _receptores(request_started)


def _receptores(sinal: object) -> list[object]:
    """Which of the two are connected (disconnect answers whether it was;
    each is connected back)."""
    ligados = []
    for funcao in (close_old_connections, reset_queries):
        if sinal.disconnect(funcao):  # type: ignore[attr-defined]
            ligados.append(funcao)
            sinal.connect(funcao)  # type: ignore[attr-defined]
    return ligados


def test_conexao_reusada_trocada_quando_morta_e_fechada_quando_velha(
    sinais_do_servidor_ligados: None,
) -> None:
    tenant = helpers.criar_tenant("Rede S")
    _, token = helpers.criar_usuario(tenant)
    app = HandlerWsgi()
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}

    def status() -> str:
        return chamar(app, "GET", "/relatorios/jobs/1", **auth)[0][:3]

    assert status() == "404"
    primeira = connection.connection
    assert primeira is not None
    assert status() == "404"
    assert connection.connection is primeira  # reused (CONN_MAX_AGE)

    # The server ends the backend between two requests: the next request's
    # first query health-checks the connection and opens a new one.
    pid = primeira.info.backend_pid
    dsn = primeira.info.dsn
    with psycopg.connect(dsn, autocommit=True) as outra:
        outra.execute("SELECT pg_terminate_backend(%s)", [pid])
    for _ in range(50):
        if _morta(primeira):
            break
        time.sleep(0.02)
    assert status() == "404"
    assert connection.connection is not primeira

    # Aged past CONN_MAX_AGE: closed when its request finishes.
    connection.close_at = time.monotonic() - 1
    assert status() == "404"
    assert connection.connection is None
    assert status() == "404"
    assert connection.connection is not None


def _morta(conexao: psycopg.Connection) -> bool:
    import select

    sonda = select.poll()
    sonda.register(conexao.fileno(), select.POLLIN)
    return bool(sonda.poll(0))
