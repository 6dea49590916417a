"""Settings of the events process (config/asgi.py): the project's, serving
the streams only, with the middleware they need.

No middleware: the streams read the token or the pages' session themselves
(relatorios/api/eventos.py), set no cookie and render no page. A middleware
is objects kept on every request for as long as its stream lasts (B9's
memory per stream), and a thread hop for the sync ones.
"""

from __future__ import annotations

from config.settings import *  # noqa: F403

ROOT_URLCONF = "config.urls_eventos"
MIDDLEWARE = list[str]()

# Its connections (a stream's authentication, first frames, catch-ups): a
# connect bounded, a statement bounded by the server, a vanished host noticed
# by the kernel. A server that accepts and then says nothing is bounded by
# RELATORIOS_EVENTOS_ESPERA_BANCO_S (relatorios/eventos/no_banco.py).
_opcoes = DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
for _opcao, _valor in (
    ("connect_timeout", 3),
    ("keepalives", 1),
    ("keepalives_idle", 5),
    ("keepalives_interval", 2),
    ("keepalives_count", 3),
    ("tcp_user_timeout", 10_000),
):
    _opcoes.setdefault(_opcao, _valor)
_prazo_ms = int(RELATORIOS_EVENTOS_ESPERA_BANCO_S * 1000)  # noqa: F405
_opcoes["options"] = (
    _opcoes.get("options", "") + f" -c statement_timeout={_prazo_ms}"
).strip()
