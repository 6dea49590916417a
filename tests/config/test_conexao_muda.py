"""A TCP connection that never sends a byte is closed by the web server, as
by the events process (tests/api/test_eventos_revogacao.py): each one held
would otherwise be a file descriptor and a slot for as long as the client
likes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests import processos

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]


def test_o_servidor_web_fecha_a_conexao_que_nunca_manda_um_byte(
    pasta_saida: Path,
) -> None:
    processo, url = processos.iniciar_web(pasta_saida / "web.log", WEB_CABECALHO_S="2")
    try:
        host, _, porta = url.removeprefix("http://").rpartition(":")
        with socket.create_connection((host, int(porta)), timeout=30) as muda:
            assert muda.recv(1) == b""
    finally:
        processo.parar()
