"""One request through a WSGI application in this process, as a server would.

Shared by B2, B10 and the callgrind child (bench/instrucoes.py): each builds
its own handler and counts what one call costs, so the call itself lives in
neither (B2 runs the callgrind child, which then imported B2 back).
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any


def chamar(
    app: Any, metodo: str, caminho: str, token: str, corpo: dict[str, Any] | None
) -> int:
    """The response's status; the body is read and closed, as a server does."""
    dados = json.dumps(corpo).encode() if corpo is not None else b""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": metodo,
        "PATH_INFO": caminho,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Token {token}",
        "CONTENT_LENGTH": str(len(dados)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(dados),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if corpo is not None:
        environ["CONTENT_TYPE"] = "application/json"
    recebido: list[str] = []

    def start_response(status: str, headers: Any, exc_info: Any = None) -> None:
        recebido.append(status)

    resposta = app(environ, start_response)
    try:
        b"".join(resposta)
    finally:
        resposta.close()  # request_finished, as the web server does
    return int(recebido[0].split()[0])
