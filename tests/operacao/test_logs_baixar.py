"""A download link's token never reaches a log line, whichever logger writes
it and in whichever field (the message, its arguments, an `extra=`)."""

from __future__ import annotations

import io
import logging
import logging.config
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import OperationalError
from django.test import RequestFactory

from config.logs import configuracao
from relatorios.operacao.conexao import ErrosDoBanco

TOKEN = "AbCdEfGh1234.zYxWvUt9876-segredo"
CAMINHO = f"/baixar/{TOKEN}"


@pytest.fixture(params=["json", "texto"])
def saida(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[io.StringIO]:
    """The logging config/logs.py gives every process, its console to a buffer."""
    monkeypatch.setenv("LOG_FORMAT", request.param)
    logging.config.dictConfig(configuracao())
    texto = io.StringIO()
    [console] = logging.getLogger().handlers
    assert isinstance(console, logging.StreamHandler)
    console.setStream(texto)
    yield texto
    logging.config.dictConfig(settings.LOGGING)


def conexao_perdida() -> None:
    ErrosDoBanco(lambda r: None).process_exception(  # type: ignore[arg-type,return-value]
        RequestFactory().get(CAMINHO), OperationalError("server closed the connection")
    )


def com_extra(nome: str) -> Callable[[], None]:
    def registrar() -> None:
        logging.getLogger("relatorios.qualquer").warning(
            "uma linha", extra={nome: f"GET {CAMINHO}?x=1"}
        )

    registrar.__name__ = f"extra_{nome}"
    return registrar


def na_mensagem() -> None:
    logging.getLogger("django.request").warning("Not Found: %s", CAMINHO)


@pytest.mark.parametrize(
    "escrever",
    [
        conexao_perdida,
        na_mensagem,
        com_extra("caminho"),
        com_extra("path"),
        com_extra("url"),
    ],
    ids=lambda f: f.__name__,
)
def test_nenhuma_linha_de_log_leva_o_token_do_link(
    saida: io.StringIO, escrever: Callable[[], Any]
) -> None:
    escrever()

    linhas = saida.getvalue()
    assert "/baixar/***" in linhas
    assert TOKEN not in linhas
