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
"""

from __future__ import annotations

import select
from typing import Any

from django.conf import settings
from django.db.backends.postgresql import base as base_do_django
from django_prometheus.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        if settings.RELATORIOS_METRICAS_SQL:
            return dict(super().get_connection_params())
        # Django's own cursors: django-prometheus' connection counters stay.
        return dict(base_do_django.DatabaseWrapper.get_connection_params(self))

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
