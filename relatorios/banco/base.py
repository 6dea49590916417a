"""Django's PostgreSQL backend with a health check that costs no round trip.

CONN_HEALTH_CHECKS makes Django run `SELECT 1` on a reused connection before
the first query of every request: a whole round trip on the dedup hit and the
status poll, whose real work is one statement (docs/benchmarks.md, B2).

A server that drops an idle connection (restart, pg_terminate_backend, an
idle timeout) first writes its error and closes the socket, so the socket
becomes readable. An idle connection whose socket has nothing to read is
therefore alive as far as a check can tell (a `SELECT 1` would not see a
silently dead network either); one with something to read gets Django's full
check.

It extends django-prometheus' PostgreSQL wrapper rather than Django's, which
counts new connections and connection errors (django_db_new_connections*):
rare events, free to count. Its per-statement counters and timer (a cursor
wrapper) cost about 40 µs of CPU per statement, measured (README, "Operating
it"): a tenth of a status poll's Python time for figures pg_stat_statements
gives better. So they are only installed with RELATORIOS_METRICAS_SQL on.
The health check below overrides only `is_usable`, so the two compose.

A connection can also carry a deadline (`prazo`, set by `banco.replica` around
its freshness probe): a connection opened meanwhile gives up connecting by
then, and is handed to the deadline as soon as it exists, so that nothing run
on it afterwards (Django's own set-up statements included) outlives it.
"""

from __future__ import annotations

import select
from typing import Any, Protocol

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base as base_do_django
from django_prometheus.db.backends.postgresql import base


class Prazo(Protocol):
    """A deadline for what runs on one thread's connection (`banco.replica`)."""

    def timeout_de_conexao(self, configurado: object) -> int:
        """psycopg's connect_timeout for a connection opened now."""
        ...

    def vigiar(self, conexao: psycopg.Connection[Any]) -> None:
        """Take charge of a connection just opened, before any statement on it."""
        ...


class DatabaseWrapper(base.DatabaseWrapper):
    # Per wrapper, so per thread (Django's connections are thread-local).
    prazo: Prazo | None = None

    def get_connection_params(self) -> dict[str, Any]:
        if settings.RELATORIOS_METRICAS_SQL:
            parametros = dict(super().get_connection_params())
        else:
            # Django's own cursors: django-prometheus' connection counters stay.
            parametros = dict(
                base_do_django.DatabaseWrapper.get_connection_params(self)
            )
        if self.prazo is not None:
            parametros["connect_timeout"] = self.prazo.timeout_de_conexao(
                parametros.get("connect_timeout")
            )
        return parametros

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        conexao = super().get_new_connection(conn_params)
        if self.prazo is not None:
            self.prazo.vigiar(conexao)
        return conexao

    def is_usable(self) -> bool:
        conexao = self.connection
        if conexao is None or conexao.closed:
            return False
        # poll, not select: select() refuses descriptors above 1023.
        sonda = select.poll()
        try:
            sonda.register(conexao.fileno(), select.POLLIN)
            eventos = sonda.poll(0)
        except (OSError, ValueError):
            return False
        if eventos:
            return bool(super().is_usable())
        return True
