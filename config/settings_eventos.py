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
