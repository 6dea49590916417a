"""A transaction PostgreSQL aborted to break a deadlock, seen by a browser.

The domain's writers run again by themselves (`banco.comum.repetivel`); an
abort that is still left after their attempts (or comes from code that is not
wrapped) reaches the page or the admin as a 409 asking to try again, never as
a 500: nothing was written. The API's own handler says the same in its JSON
shape (`api.erros`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from relatorios.banco.comum import conflito_repetivel

logger = logging.getLogger(__name__)

MENSAGEM = "outra operação alterou estes dados ao mesmo tempo; tente de novo"


class ConflitoEntreTransacoes:
    """Answers a deadlock victim or serialization loser with a 409 page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if not isinstance(exception, DatabaseError) or not conflito_repetivel(
            exception
        ):
            return None
        logger.warning(
            "conflito entre transações não resolvido",
            extra={"caminho": request.path},
        )
        resposta = render(request, "409.html", {"mensagem": MENSAGEM}, status=409)
        resposta["Retry-After"] = "1"
        return resposta
