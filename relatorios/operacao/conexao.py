"""A request whose database connection was lost: a 503 to retry, not a 500.

PostgreSQL ends a backend under a request (a restart, a failover,
`pg_terminate_backend`, a network cut) after the connection's health check
passed at the request's start: the next statement raises `OperationalError`
(or `InterfaceError` on a connection psycopg already knows is closed). The
transaction it was in is gone, and the same request again gets a new
connection: the client is told so (503, `Retry-After`), in the API's JSON
shape under /relatorios/ and as a page elsewhere. The connection is closed
here, so the worker's next request opens a fresh one whatever Django's own
end-of-request check decides.

A deadlock victim is also an `OperationalError`: it keeps its 409
(`conflitos`, and the API's handler). One middleware answers both, the
connection first: two layers that only wait for an exception cost every
request a layer each. An error
raised by a middleware before the view (a session read) is turned into a
response by Django before any `process_exception` sees it: a 500, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader

from relatorios.banco.comum import conflito_repetivel
from relatorios.operacao.conflitos import resposta_de_conflito

logger = logging.getLogger(__name__)

MENSAGEM = "o banco de dados ficou indisponível durante o pedido; tente de novo"
RETRY_AFTER_S = "1"
# The API's URL space (api.entrada.e_da_api, which this layer cannot import):
# every answer there is JSON.
PREFIXO_DA_API = "/relatorios/"


class ErrosDoBanco:
    """Answers a request whose database connection died under it with a 503,
    and a deadlock victim that got past the domain's retries with a 409."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return resposta_de_conflito(request, exception)
        if conflito_repetivel(exception):
            return resposta_de_conflito(request, exception)
        logger.warning(
            "conexão com o banco perdida durante o pedido",
            extra={"caminho": request.path, "erro": str(exception)[:200]},
        )
        for conexao in connections.all(initialized_only=True):
            conexao.close()
        resposta: HttpResponse
        if request.path_info.startswith(PREFIXO_DA_API):
            resposta = JsonResponse({"erro": MENSAGEM}, status=503)
        else:
            # Without the request: no context processor, so no session or
            # user read on a database that just went away.
            resposta = HttpResponse(loader.render_to_string("503.html"), status=503)
        resposta["Retry-After"] = RETRY_AFTER_S
        return resposta
