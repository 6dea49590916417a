"""Hostile input stops here: oversized bodies, and text the service cannot store.

Three guards, because DRF's JSON parser reads the request stream itself and so
never meets Django's DATA_UPLOAD_MAX_MEMORY_SIZE:

- `LimiteDoCorpo` (middleware) answers 413 from the Content-Length header
  alone, so a worker never reads a 100 MB body. Without the header (chunked)
  Django's WSGI request reads nothing, so there is nothing to bound.
- `JSONEstrito` (the API's parser) reads at most the limit, and turns what
  Python's json module or PostgreSQL would choke on into a 400: invalid
  UTF-8, nesting deep enough to exhaust the recursion limit, NaN/Infinity and
  numbers that overflow to them, NUL characters (PostgreSQL's text and jsonb
  cannot hold U+0000) and lone UTF-16 surrogates (`"\\ud800"` is valid JSON
  but no character: it cannot be encoded to UTF-8 for the database). Either
  would fail as a 500 at the INSERT; here it is a 400 naming the field.
- `TextoImpossivel` (middleware) refuses the same two characters in a query
  string or a form (pages, admin, login): Django decodes those with whatever
  `charset` the request's Content-Type names, and some Python codecs
  (`raw_unicode_escape`, `unicode_escape`, `utf-7`) turn plain ASCII into a
  lone surrogate or a NUL that no form field checks for.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import IO, Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

PREFIXO_DA_API = "/relatorios/"


def e_da_api(caminho: str) -> bool:
    """The API's URL space: every answer there is JSON."""
    return caminho.startswith(PREFIXO_DA_API) or caminho == PREFIXO_DA_API[:-1]


def mensagem_de_corpo_grande() -> str:
    return (
        f"corpo grande demais: o limite é {settings.RELATORIOS_CORPO_MAX_BYTES} bytes"
    )


class CorpoGrandeDemais(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "corpo grande demais"


class CorpoInvalido(exceptions.ParseError):
    """400 naming the field (`campo`), shaped by the API's exception handler.

    A ParseError, not the domain's ErroDeParametro: DRF re-raises a parser's
    exception from inside `request.data`, and only its own kinds get there
    intact (ErroDeParametro is a frozen dataclass, which DRF cannot annotate).
    """

    def __init__(self, mensagem: str, *, campo: str = "corpo") -> None:
        super().__init__(mensagem)
        self.campo = campo


class LimiteDoCorpo:
    """413 for a declared body over RELATORIOS_CORPO_MAX_BYTES, before it is read."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        declarado = request.META.get("CONTENT_LENGTH") or "0"
        try:
            tamanho = int(declarado)
        except ValueError:
            tamanho = -1
        if tamanho < 0:
            return self._erro(request, 400, "Content-Length inválido")
        if tamanho > settings.RELATORIOS_CORPO_MAX_BYTES:
            resposta = self._erro(request, 413, mensagem_de_corpo_grande())
            # The unread body stays in the socket: this connection is done.
            resposta["Connection"] = "close"
            return resposta
        return self.get_response(request)

    def _erro(self, request: HttpRequest, codigo: int, mensagem: str) -> HttpResponse:
        return _resposta_de_erro(request, codigo, mensagem)


FORMULARIOS = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})


class TextoImpossivel:
    """400 naming the parameter when a query string or a form field (name or
    value) holds a NUL or a lone surrogate; the view never sees it.

    Only requests that have a query string or a form body are looked at (a
    token call's status request has neither: nothing is decoded for it).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        campos: list[QueryDict] = []
        if request.META.get("QUERY_STRING"):
            campos.append(request.GET)
        if request.method == "POST" and request.content_type in FORMULARIOS:
            campos.append(request.POST)
        for consulta in campos:
            for nome, valores in consulta.lists():
                achado = _IMPOSSIVEL.search(nome) or next(
                    filter(None, map(_IMPOSSIVEL.search, valores)), None
                )
                if achado is not None:
                    campo = _IMPOSSIVEL.sub("", nome) or "corpo"
                    return _resposta_de_erro(
                        request, 400, _motivo(achado.group()), campo=campo
                    )
        return self.get_response(request)


def _resposta_de_erro(
    request: HttpRequest, codigo: int, mensagem: str, *, campo: str | None = None
) -> HttpResponse:
    """JSON under the API (the error handler's shape), plain text elsewhere."""
    if e_da_api(request.path_info):
        corpo = (
            {"erro": mensagem} if campo is None else {"erro": mensagem, "campo": campo}
        )
        return JsonResponse(corpo, status=codigo)
    texto = mensagem if campo is None else f"{campo}: {mensagem}"
    return HttpResponse(texto, status=codigo, content_type="text/plain; charset=utf-8")


class JSONEstrito(JSONParser):
    """JSON as RFC 8259 says (UTF-8, whatever charset the client claims), bounded."""

    def parse(
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        if stream is None:
            return None
        limite = settings.RELATORIOS_CORPO_MAX_BYTES
        bruto = stream.read(limite + 1)
        if len(bruto) > limite:
            raise CorpoGrandeDemais(mensagem_de_corpo_grande())
        try:
            texto = bruto.decode("utf-8")
            dados = json.loads(
                texto, parse_constant=_recusar_constante, parse_float=_numero_finito
            )
        except UnicodeDecodeError:
            raise CorpoInvalido("corpo inválido: não é UTF-8") from None
        except RecursionError:
            raise CorpoInvalido("corpo inválido: JSON aninhado demais") from None
        except ValueError as erro:
            # Also the 4300-digit limit of int(): a huge integer is refused
            # before it is ever converted.
            raise CorpoInvalido(f"corpo inválido: {erro}") from None
        impossivel = _texto_impossivel(dados)
        if impossivel is not None:
            campo, caractere = impossivel
            raise CorpoInvalido(_motivo(caractere), campo=campo)
        return dados


def _recusar_constante(nome: str) -> Any:
    raise ValueError(f"{nome} não é um número JSON válido")


def _numero_finito(texto: str) -> float:
    numero = float(texto)
    if not math.isfinite(numero):
        raise ValueError(f"número fora do intervalo: {texto[:40]}")
    return numero


# What no text the service stores may hold: U+0000 (PostgreSQL's text and
# jsonb refuse it) and the surrogate halves U+D800-U+DFFF, which json.loads
# lets through from a lone `\udXXX` escape (a proper pair becomes one
# character) and UTF-8 cannot encode.
_IMPOSSIVEL = re.compile("[\x00\ud800-\udfff]")


def _motivo(caractere: str) -> str:
    if caractere == "\x00":
        return "textos não podem conter o caractere NUL (\\u0000)"
    return (
        "textos não podem conter metade de um par UTF-16 (\\ud800 a \\udfff) "
        "sem a outra metade"
    )


def _texto_impossivel(dados: Any) -> tuple[str, str] | None:
    """The top-level field ("corpo" if none) holding a NUL or a lone surrogate
    anywhere inside it, and that character; None if every text can be stored."""
    if isinstance(dados, dict):
        for chave, valor in dados.items():
            achado = _IMPOSSIVEL.search(chave) or _primeiro_impossivel(valor)
            if achado is not None:
                return _IMPOSSIVEL.sub("", chave) or "corpo", achado.group()
        return None
    achado = _primeiro_impossivel(dados)
    return None if achado is None else ("corpo", achado.group())


def _primeiro_impossivel(dados: Any) -> re.Match[str] | None:
    # Iterative: the parser already bounded the depth by the recursion limit,
    # but this walk must not be the thing that hits it.
    pendentes = [dados]
    while pendentes:
        atual = pendentes.pop()
        if isinstance(atual, str):
            if achado := _IMPOSSIVEL.search(atual):
                return achado
        elif isinstance(atual, dict):
            for chave, valor in atual.items():
                if achado := _IMPOSSIVEL.search(chave):
                    return achado
                pendentes.append(valor)
        elif isinstance(atual, list):
            pendentes.extend(atual)
    return None
