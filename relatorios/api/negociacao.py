"""DRF's content negotiation: remembered per Accept header, or none at all.

Every API answer goes through DRF's `DefaultContentNegotiation`, which parses
the `Accept` header and matches it against the view's renderers on every
request: ~3% of a status request's CPU (py-spy, B1 S3), for a header a
client sends the same way every time. The answer depends only on that header
and the renderers' classes, so it is computed once per pair; anything else
(`?format=`, a format suffix) goes the ordinary way.

The API's views render JSON only. For them the commonest requests (no
`Accept`, `*/*`, `application/json`, no query string) have a fixed answer,
JSON, given without reading DRF's header and query dicts (building
`request.headers` and `request.query_params` was most of what was left of
the negotiation's cost); every other `Accept` is decided as above, so a type
the API does not render is still the documented 406.

A result's file (CSV, .xlsx) negotiates nothing: `SemNegociacao`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from rest_framework.compat import LONG_SEPARATORS, SHORT_SEPARATORS
from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.utils import encoders

# Accept values whose answer, when JSON is the first renderer, is JSON
# (DRF's own choice: tests/api/test_negociacao.py compares them).
_SEMPRE_JSON = frozenset({None, "*/*", "application/json"})


class NegociacaoMemorizada(DefaultContentNegotiation):
    def select_renderer(
        self,
        request: Request,
        renderers: Iterable[BaseRenderer],
        format_suffix: str | None = None,
    ) -> tuple[BaseRenderer, str]:
        lista = renderers if isinstance(renderers, list) else list(renderers)
        meta = request.META
        if (
            not format_suffix
            and meta.get("HTTP_ACCEPT") in _SEMPRE_JSON
            and not meta.get("QUERY_STRING")
            and lista
            and isinstance(lista[0], JSONRenderer)
            and lista[0].media_type == JSONRenderer.media_type
        ):
            return lista[0], JSONRenderer.media_type
        if format_suffix or self.settings.URL_FORMAT_OVERRIDE in request.query_params:
            return super().select_renderer(request, renderers, format_suffix)
        accept = request.headers.get("accept", "*/*")
        indice, tipo = _escolher(accept, tuple(type(r) for r in lista))
        return lista[indice], tipo


# Bounded: a client can send any Accept; the usual ones are a handful.
@lru_cache(maxsize=256)
def _escolher(accept: str, classes: tuple[type[BaseRenderer], ...]) -> tuple[int, str]:
    """(index of the chosen renderer, media type): DRF's own choice. Raises
    NotAcceptable as DRF does (lru_cache does not keep exceptions)."""
    renderers = [classe() for classe in classes]
    pedido: Any = _SoAccept(accept)
    escolhido, tipo = DefaultContentNegotiation().select_renderer(pedido, renderers)
    return renderers.index(escolhido), tipo


class _SoAccept:
    """What DefaultContentNegotiation reads of a request, with no format."""

    def __init__(self, accept: str) -> None:
        self.headers = {"accept": accept}
        self.query_params: dict[str, str] = {}


class JSONDeSaida(JSONRenderer):
    """DRF's JSONRenderer with its encoder built once.

    `json.dumps(..., cls=...)` builds an encoder for every response; the
    same settings give the same encoder, so one instance (stateless between
    calls) renders every plain-JSON answer. An `indent` (from the Accept
    header or the browsable API's context) goes DRF's way.
    """

    codificador = encoders.JSONEncoder(
        ensure_ascii=JSONRenderer.ensure_ascii,
        allow_nan=not JSONRenderer.strict,
        separators=SHORT_SEPARATORS if JSONRenderer.compact else LONG_SEPARATORS,
    )

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Any = None,
    ) -> bytes:
        if data is None:
            return b""
        if accepted_media_type in (None, self.media_type) and not (
            renderer_context or {}
        ).get("indent"):
            texto = self.codificador.encode(data)
            # DRF's escaping: the output stays a strict JavaScript subset.
            texto = texto.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
            return texto.encode()
        return bytes(super().render(data, accepted_media_type, renderer_context))


class SemNegociacao(BaseContentNegotiation):
    """The CSV view answers CSV or a JSON error whatever `Accept` says: a
    client asking for text/csv must get the 404's body, not a 406."""

    def select_renderer(
        self,
        request: Request,
        renderers: Iterable[BaseRenderer],
        format_suffix: str | None = None,
    ) -> tuple[BaseRenderer, str]:
        primeiro = next(iter(renderers))
        return primeiro, primeiro.media_type

    def select_parser(
        self, request: Request, parsers: Iterable[BaseParser]
    ) -> BaseParser | None:
        return next(iter(parsers), None)
