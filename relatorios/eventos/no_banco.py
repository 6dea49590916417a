"""The events process's synchronous database reads, each with a deadline.

A stream touches the database to open (the token or session, its first
frames), to catch up and to read a `pronto`'s result, through Django's
synchronous connections. A server that stops answering (stopped, wedged, a
proxy in front of it black-holing: its host still acknowledging, so no
keepalive notices) held each of those reads for good: every new stream of
every tenant hung with no answer, and the threads never came back.

So each read runs on a thread of its own from the loop's pool (not the one
shared thread `sync_to_async` defaults to: one tenant's slow read never
holds another's), for at most RELATORIOS_EVENTOS_ESPERA_BANCO_S. Past it,
the read's connection is shut down under it, so its thread gets an error
and returns, and the next read connects again (config/settings_eventos.py
bounds the connect): the process recovers by itself when the server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, Error, connections

T = TypeVar("T")


class SemBanco(Exception):
    """The database failed or did not answer in time."""


async def ler(funcao: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`funcao(*args, **kwargs)` on a thread of its own, within the deadline;
    SemBanco for any database error or past the deadline."""
    usadas: list[Any] = []

    def rodar() -> T:
        conexao = connections[DEFAULT_DB_ALIAS]
        # One shut down under an earlier read (or broken by the server): a
        # new one now instead of an error.
        conexao.close_if_unusable_or_obsolete()
        usadas.append(conexao)
        return funcao(*args, **kwargs)

    prazo = settings.RELATORIOS_EVENTOS_ESPERA_BANCO_S
    try:
        return await asyncio.wait_for(
            sync_to_async(rodar, thread_sensitive=False)(), prazo
        )
    except TimeoutError:
        for conexao in usadas:
            _derrubar(conexao)
        raise SemBanco(f"o banco não respondeu em {prazo:g} s") from None
    except Error as erro:
        raise SemBanco(f"banco indisponível: {type(erro).__name__}") from None


def _derrubar(conexao: Any) -> None:
    """Shut the connection's socket down under the thread blocked on it."""
    bruta = conexao.connection
    if bruta is None:
        return
    with contextlib.suppress(OSError, psycopg.Error):
        soquete = socket.fromfd(bruta.pgconn.socket, socket.AF_INET, socket.SOCK_STREAM)
        with soquete:
            soquete.shutdown(socket.SHUT_RDWR)
