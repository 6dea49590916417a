"""Hostile input stops here: oversized bodies, and JSON the service cannot store.

Two guards, because DRF's JSON parser reads the request stream itself and so
never meets Django's DATA_UPLOAD_MAX_MEMORY_SIZE:

- `LimiteDoCorpo` (middleware) answers 413 from the Content-Length header
  alone, so a worker never reads a 100 MB body. Without the header (chunked)
  Django's WSGI request reads nothing, so there is nothing to bound.
- `JSONEstrito` (the API's parser) reads at most the limit, and turns what
  Python's json module or PostgreSQL would choke on into a 400: invalid
  UTF-8, nesting deep enough to exhaust the recursion limit, NaN/Infinity and
  numbers that overflow to them, and NUL characters (PostgreSQL's text and
  jsonb cannot hold U+0000, so they would fail as a 500 at the INSERT).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import IO, Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
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

    A ParseError, not the services' ErroDeParametro: DRF re-raises a parser's
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
        if e_da_api(request.path_info):
            return JsonResponse({"erro": mensagem}, status=codigo)
        return HttpResponse(
            mensagem, status=codigo, content_type="text/plain; charset=utf-8"
        )


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
        campo = _campo_com_nul(dados)
        if campo is not None:
            raise CorpoInvalido(
                "textos não podem conter o caractere NUL (\\u0000)", campo=campo
            )
        return dados


def _recusar_constante(nome: str) -> Any:
    raise ValueError(f"{nome} não é um número JSON válido")


def _numero_finito(texto: str) -> float:
    numero = float(texto)
    if not math.isfinite(numero):
        raise ValueError(f"número fora do intervalo: {texto[:40]}")
    return numero


def _campo_com_nul(dados: Any) -> str | None:
    """The top-level field holding a NUL anywhere inside it ("corpo" if none)."""
    if isinstance(dados, dict):
        for chave, valor in dados.items():
            if "\x00" in chave or _tem_nul(valor):
                return str(chave).replace("\x00", "")
        return None
    return "corpo" if _tem_nul(dados) else None


def _tem_nul(dados: Any) -> bool:
    # Iterative: the parser already bounded the depth by the recursion limit,
    # but this walk must not be the thing that hits it.
    pendentes = [dados]
    while pendentes:
        atual = pendentes.pop()
        if isinstance(atual, str):
            if "\x00" in atual:
                return True
        elif isinstance(atual, dict):
            for chave, valor in atual.items():
                if "\x00" in chave:
                    return True
                pendentes.append(valor)
        elif isinstance(atual, list):
            pendentes.extend(atual)
    return False
