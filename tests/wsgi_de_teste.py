"""The production WSGI app plus paths only the server's tests use.

tests/config/test_servidor.py starts the real launcher (config/servidor.py) with
this target: everything but `/_teste/...` is config.wsgi's application, so
the server, its watchdog and the drain before a worker's replacement (by
lifetime or SIGHUP) are what ships. These paths exist in no URLconf:
production cannot reach them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from config.wsgi import application as _producao


def application(
    environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    caminho = environ.get("PATH_INFO", "")
    if caminho == "/_teste/dormir":
        # A view stuck past the timeout (the watchdog must end its worker).
        print(f"dormindo pid={os.getpid()}", flush=True)
        time.sleep(float(environ.get("QUERY_STRING") or "60"))
        return _texto(start_response, "acordei")
    if caminho == "/_teste/pid":
        return _texto(start_response, str(os.getpid()))
    return _producao(environ, start_response)


def _texto(start_response: Callable[..., Any], texto: str) -> list[bytes]:
    corpo = texto.encode()
    start_response(
        "200 OK",
        [("Content-Type", "text/plain"), ("Content-Length", str(len(corpo)))],
    )
    return [corpo]
