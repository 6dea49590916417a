"""The one place that shapes every API error body: {"erro": ..., "campo": ...}.

Errors raised inside a DRF view come through `tratar_excecao`. Those Django
answers itself (no URL matched, a crash, a bad Host) come through its
handler400/403/404/500 (config/urls.py): under /relatorios/ they are JSON of
the same shape, whatever the HTML templates do; elsewhere Django's pages.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from relatorios.api.entrada import CorpoInvalido, e_da_api
from relatorios.banco.comum import conflito_repetivel
from relatorios.jobs.pedidos import LimiteDePendentes
from relatorios.models import LimiteDoTenant
from relatorios.operacao import metricas
from relatorios.operacao.conflitos import MENSAGEM as MENSAGEM_DE_CONFLITO
from relatorios.tipos import TipoDesconhecido
from relatorios.tipos.normalizacao import ErroDeParametro

logger = logging.getLogger(__name__)

_MENSAGENS = {
    exceptions.NotAuthenticated: (
        "credenciais ausentes: envie 'Authorization: Token <chave>'"
    ),
    exceptions.AuthenticationFailed: "token inválido ou usuário inativo",
    exceptions.ParseError: "corpo inválido: envie um objeto JSON",
    exceptions.UnsupportedMediaType: (
        "corpo deve ser JSON (Content-Type: application/json)"
    ),
}


def tratar_excecao(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ErroDeParametro):
        return _erro(status.HTTP_400_BAD_REQUEST, exc.mensagem, campo=exc.campo)
    if isinstance(exc, LimiteDePendentes):
        metricas.recusa_429("limite_pendentes")
        limite = _erro(status.HTTP_429_TOO_MANY_REQUESTS, str(exc))
        limite["Retry-After"] = str(settings.RELATORIOS_RETRY_AFTER_429_S)
        return limite
    if isinstance(exc, LimiteDoTenant):
        # Not a 429: no wait makes room, deleting one of them does.
        return _erro(status.HTTP_409_CONFLICT, str(exc))
    if isinstance(exc, (TipoDesconhecido, Http404, exceptions.NotFound)):
        return _erro(status.HTTP_404_NOT_FOUND, "não encontrado")
    if isinstance(exc, CorpoInvalido):
        return _erro(status.HTTP_400_BAD_REQUEST, str(exc.detail), campo=exc.campo)
    if isinstance(exc, (exceptions.ParseError, exceptions.UnsupportedMediaType)):
        # A body that is not JSON is a bad request like any other.
        return _erro(status.HTTP_400_BAD_REQUEST, _MENSAGENS[type(exc)], campo="corpo")
    if isinstance(exc, DatabaseError) and conflito_repetivel(exc):
        # A deadlock victim past the domain's own retries (banco.comum.repetivel):
        # nothing was written, and the same request again will likely pass.
        conflito = _erro(status.HTTP_409_CONFLICT, MENSAGEM_DE_CONFLITO)
        conflito["Retry-After"] = "1"
        return conflito
    if isinstance(exc, exceptions.Throttled):
        metricas.recusa_429("limite_api")
    resposta = exception_handler(exc, context)
    if resposta is None:
        return None  # not an API error: Django's 500 handling, logged as such
    if isinstance(exc, exceptions.ValidationError):
        erros = list(_achatar(exc.detail))
        corpo: dict[str, Any] = dict(erros[0]) if erros else {"erro": "inválido"}
        if len(erros) > 1:
            corpo["erros"] = erros
        resposta.data = corpo
        return resposta
    mensagem = _MENSAGENS.get(type(exc))
    if mensagem is None and isinstance(exc, exceptions.APIException):
        mensagem = str(exc.detail)
    resposta.data = {"erro": mensagem or "erro"}
    return resposta


def _erro(codigo: int, mensagem: str, *, campo: str | None = None) -> Response:
    corpo = {"erro": mensagem}
    if campo is not None:
        corpo["campo"] = campo
    return Response(corpo, status=codigo)


def _achatar(detalhe: Any, campo: str | None = None) -> Any:
    if isinstance(detalhe, dict):
        for chave, valor in detalhe.items():
            yield from _achatar(valor, chave if campo is None else f"{campo}.{chave}")
    elif isinstance(detalhe, list):
        for item in detalhe:
            yield from _achatar(item, campo)
    else:
        item = {"erro": str(detalhe)}
        if campo is not None and campo != "non_field_errors":
            item["campo"] = campo
        yield item


# --- Django's own error views (config/urls.py) ---------------------------------


def pedido_ruim(request: HttpRequest, exception: Exception) -> HttpResponse:
    if e_da_api(request.path_info):
        return JsonResponse({"erro": "pedido inválido"}, status=400)
    return defaults.bad_request(request, exception)


def proibido(request: HttpRequest, exception: Exception) -> HttpResponse:
    if e_da_api(request.path_info):
        return JsonResponse({"erro": "acesso negado"}, status=403)
    return defaults.permission_denied(request, exception)


def nao_encontrado(request: HttpRequest, exception: Exception) -> HttpResponse:
    if e_da_api(request.path_info):
        return JsonResponse({"erro": "não encontrado"}, status=404)
    return defaults.page_not_found(request, exception)


def erro_do_servidor(request: HttpRequest) -> HttpResponse:
    # No template: a 500 page that needs the static manifest (or anything
    # else that may be what broke) must not fail in turn.
    if e_da_api(request.path_info):
        return JsonResponse({"erro": "erro interno do servidor"}, status=500)
    return defaults.server_error(request)
