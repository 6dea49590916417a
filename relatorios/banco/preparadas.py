"""Server-side prepared statements for a few hot, constant statements.

The worker's connections use Django's client-side binding (settings.py says
why: a report's chunk query and gerar_dados's bulk insert are slower as
prepared statements). A statement whose text never changes and which plans
the same for every row it touches is the opposite case: `ciclo.concluir`,
one statement per job, spent about 0.5 ms of PostgreSQL's CPU parsing and
planning its CTEs every time, as much as executing them (docs/historico/benchmarks.md,
B3). `cursor()` gives a Django cursor whose statements psycopg prepares on
their first run on the connection; PostgreSQL then only binds and executes
them (after five runs, with a generic plan if it costs no more: the default
`plan_cache_mode`).

A prepared statement lives on its connection: fine for django-q2's workers
(their connections are their own) and without a pooler, as for the web
workers (settings.py: a transaction-mode pgbouncer older than 1.21 would
break both). Only statements without several commands can be prepared.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

NUNCA = 2**31 - 1


class _CursorPreparado(psycopg.Cursor[Any]):
    """A server-side binding cursor that prepares every statement at once."""

    def execute(
        self, query: Any, params: Any = None, *, prepare: bool | None = None, **kw: Any
    ) -> Any:
        return super().execute(query, params, prepare=True, **kw)


class _DepuracaoPreparada(CursorDebugWrapper):
    """Django's debug cursor logs the text the driver last sent, which psycopg
    does not keep for a prepared statement: this one logs the statement
    composed with its values, as Django's client-side cursors do."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return CursorWrapper.execute(self, sql, params)


@cache
def _classe(metricas: bool) -> type[psycopg.Cursor[Any]]:
    if not metricas:
        return _CursorPreparado
    # The same per-statement counters as the connection's other cursors
    # (relatorios/banco/base.py).
    from django_prometheus.db.common import ExportingCursorWrapper

    return ExportingCursorWrapper(_CursorPreparado, connection.alias, connection.vendor)


def cursor() -> CursorWrapper:
    """A Django cursor on this thread's connection whose statements run
    prepared: Django's error translation and query log (tests capture it)
    see them as any other."""
    connection.ensure_connection()
    conexao = connection.connection
    if conexao.prepare_threshold is None:
        # Django turns psycopg's preparing off unless DB_PREPARE_THRESHOLD is
        # set, and psycopg then ignores prepare=True as well. A threshold
        # never reached prepares only what asks to be: Django's client-side
        # cursors never prepare anyway.
        conexao.prepare_threshold = NUNCA
    bruto = _classe(settings.RELATORIOS_METRICAS_SQL)(conexao)
    if connection.queries_logged:
        return _DepuracaoPreparada(bruto, connection)
    return connection.make_cursor(bruto)  # type: ignore[arg-type]
