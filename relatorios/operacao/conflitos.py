"""A transaction PostgreSQL aborted to break a deadlock, seen by a browser.

The domain's writers run again by themselves (`banco.comum.repetivel`); an
abort that is still left after their attempts (or comes from code that is not
wrapped) reaches the page or the admin as a 409 asking to try again, never as
a 500: nothing was written. The API's own handler says the same in its JSON
shape (`api.erros`).
"""

from __future__ import annotations

import logging

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from relatorios.banco.comum import conflito_repetivel

logger = logging.getLogger(__name__)

MENSAGEM = "outra operação alterou estes dados ao mesmo tempo; tente de novo"


def resposta_de_conflito(
    request: HttpRequest, exception: Exception
) -> HttpResponse | None:
    """A 409 page for a deadlock victim or serialization loser; None for any
    other error. (`conexao.ErrosDoBanco` is the middleware that asks.)"""
    if not isinstance(exception, DatabaseError) or not conflito_repetivel(exception):
        return None
    logger.warning(
        "conflito entre transações não resolvido",
        extra={"caminho": request.path},
    )
    resposta = render(request, "409.html", {"mensagem": MENSAGEM}, status=409)
    resposta["Retry-After"] = "1"
    return resposta
