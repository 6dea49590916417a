"""The backend's health check: no round trip on a quiet connection, and a
connection the server dropped between requests is replaced, not a 500."""

from __future__ import annotations

import select
import tempfile
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests import helpers, processos

pytestmark = pytest.mark.django_db(transaction=True)


def derrubar(pids: list[int]) -> None:
    with psycopg.connect(processos.ambiente()["DATABASE_URL"], autocommit=True) as c:
        for pid in pids:
            c.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_conexao_quieta_e_usavel_sem_ida_ao_banco() -> None:
    connection.ensure_connection()
    with tempfile.NamedTemporaryFile(mode="w+") as arquivo:
        connection.connection.pgconn.trace(arquivo.fileno())
        try:
            usavel = connection.is_usable()
        finally:
            connection.connection.pgconn.untrace()
        rastro = Path(arquivo.name).read_text()
    assert usavel
    assert rastro == ""  # not a single message to the server


def test_conexao_derrubada_pelo_servidor_nao_e_usavel() -> None:
    connection.ensure_connection()
    derrubar([connection.connection.info.backend_pid])
    socket_do_banco = connection.connection.fileno()
    helpers.esperar(
        lambda: select.select([socket_do_banco], [], [], 0)[0],
        descricao="o servidor fechar a conexão",
    )
    assert not connection.is_usable()
    connection.close()


@pytest.mark.processos
def test_servidor_troca_conexoes_derrubadas_entre_pedidos(
    token: str, servidor: str
) -> None:
    for _ in range(12):  # every web worker now holds a connection
        assert (
            processos.requisitar("GET", f"{servidor}/relatorios/jobs/1", token=token)[0]
            == 404
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        alheias = [pid for (pid,) in cursor.fetchall()]
    assert alheias
    derrubar(alheias)

    def encerradas() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [alheias]
            )
            return cursor.fetchone()[0] == 0

    # pg_terminate_backend only signals; the request comes after the deaths.
    helpers.esperar(encerradas, descricao="as conexões morrerem")

    codigos = {
        processos.requisitar("GET", f"{servidor}/relatorios/jobs/1", token=token)[0]
        for _ in range(12)
    }
    assert codigos == {404}
