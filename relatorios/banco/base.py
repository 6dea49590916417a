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

It extends django-prometheus' PostgreSQL wrapper rather than Django's: that
one counts connections, statements and errors and times each statement
(django_db_*), and changes nothing else. The health check below overrides
only `is_usable`, so the two compose.
"""

from __future__ import annotations

import select

from django_prometheus.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
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
