"""The events process: granian's ASGI interface serving config/asgi.py.

`python -m config.eventos` (Procfile's `eventos`, `make run`, the tests, B9).

One worker by default: a worker is a process, and each process holds one
connection reading the events for all of its streams; more streams than one
core can feed are more processes (EVENTOS_WORKERS here, or more hosts: every
process reads the table, so each sees every event). The WSGI server (config/servidor.py)
serves everything else; a proxy routes the two stream paths here
(docs/operacao.md, "The events process").

Settings (environment): EVENTOS_BIND (127.0.0.1:8001), EVENTOS_WORKERS (1),
EVENTOS_GRACEFUL_TIMEOUT_S (10: what a worker waits for its streams to end
after they were told to, on SIGTERM), EVENTOS_CABECALHO_S (10: a connection
that has not sent its request's headers by then, a byte or none, is closed).
"""

from __future__ import annotations

import logging
import logging.config
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from granian import Granian
from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings

from config.logs import configuracao as configuracao_de_logs

logger = logging.getLogger("relatorios.eventos")

ALVO = "config.asgi:application"
# Connections granian accepts per worker beyond the streams' own cap: the
# refusals (429) are answered by the view, so they must get in.
FOLGA = 1000


def main(argv: Sequence[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings_eventos"
    logs = configuracao_de_logs(acesso=False)
    logging.config.dictConfig(logs)
    host, _, porta = os.environ.get("EVENTOS_BIND", "127.0.0.1:8001").rpartition(":")

    import django
    from django.conf import settings

    django.setup(set_prefix=False)
    from config.arranque import problema_da_chave, problema_dos_eventos

    problema = problema_da_chave() or problema_dos_eventos()
    if problema:
        logger.error("refusing to start: %s", problema)
        return 1
    cabecalho_ms = int(float(os.environ.get("EVENTOS_CABECALHO_S") or 10) * 1000)
    if cabecalho_ms <= 0:
        logger.error("refusing to start: EVENTOS_CABECALHO_S must be > 0")
        return 1
    servidor = Granian(
        ALVO,
        address=host.strip("[]") or "127.0.0.1",
        port=int(porta),
        interface=Interfaces.ASGI,
        # HTTP/1.1 only (the proxy speaks it to us; EventSource needs no
        # more): in "auto", granian waits for a connection's first bytes to
        # tell the protocol, with no deadline, so a connection that never
        # sent one was never closed. The header deadline then covers it.
        http=HTTPModes.http1,
        http1_settings=HTTP1Settings(header_read_timeout=cabecalho_ms),
        workers=int(os.environ.get("EVENTOS_WORKERS") or 1),
        # Every open stream is a request in progress: granian's default (its
        # listen backlog) would stop accepting at 1,024 streams.
        backpressure=settings.RELATORIOS_EVENTOS_MAX_POR_PROCESSO + FOLGA,
        log_dictconfig=logs,
        log_access=False,
        respawn_failed_workers=True,
        workers_kill_timeout=int(os.environ.get("EVENTOS_GRACEFUL_TIMEOUT_S") or 10),
    )
    servidor.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
