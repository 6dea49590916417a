"""The API's own middleware chain, for calls that authenticate by token.

Django runs every request through the whole MIDDLEWARE list. A client app's
call under /relatorios/ with `Authorization: Token ...` uses none of what
serves browsers: sessions, CSRF, Django's authentication middleware,
messages, the login lockout, static files. DRF decides such a call by its
token alone (valid: that user; invalid: 401), never falling back to the
session, so those six only cost time: ~10% of a status request's
instructions in-process (callgrind, 400 requests, 2.02M → 1.83M each).

So the WSGI handler builds a second chain, `settings.MIDDLEWARE_DA_API`, and
picks it by path and header. Everything else — the pages, the admin, the
manager's page polling the status with its session, a call with no or
another kind of credentials — takes the full chain, as before.

That chain is one middleware, `MiddlewareDaApi`: what the seven the API kept
(metrics, security headers, request id, body limit, the NUL/surrogate
refusal, CommonMiddleware's host check and Content-Length, X-Frame-Options,
the deadlock 409) did, in their order, in one call. Each layer Django stacks
costs its own wrapper and `MiddlewareMixin` dispatch; one layer instead of
seven was ~5% of a status read's instructions. Django's own middlewares are
used through their public hooks (`process_request`/`process_response`), so
their settings (SECURE_*, ALLOWED_HOSTS, X_FRAME_OPTIONS) keep applying.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_started
from django.db import close_old_connections, reset_queries
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django_prometheus.middleware import Metrics
from django_prometheus.utils import Time
from rest_framework.authentication import get_authorization_header

from relatorios.api.entrada import LimiteDoCorpo, TextoImpossivel, e_da_api
from relatorios.operacao import logs
from relatorios.operacao.conexao import ConexaoPerdida
from relatorios.operacao.conflitos import ConflitoEntreTransacoes
from relatorios.operacao.metricas import contar_resposta


class HandlerWsgi(WSGIHandler):
    """Django's WSGI handler with the API's shorter chain beside the full one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cadeia_da_api = _CadeiaDaApi()

    def get_response(self, request: HttpRequest) -> HttpResponseBase:
        if por_token(request):
            return self.cadeia_da_api.get_response(request)
        return super().get_response(request)


def sinais_do_servidor() -> None:
    """Drops two request_started receivers that are pure cost in the web
    server (config/wsgi.py; ~5% of a status read's instructions):

    - `reset_queries`: it empties the query log that only DEBUG (or a
      CaptureQueriesContext, which manages its own) fills;
    - `close_old_connections` at the start: it runs again when the request
      finishes (kept: an aged, broken or mid-transaction connection is closed
      there, and the next first query health-checks it). All it adds at the
      start is closing a connection that aged while idle, and with
      CONN_HEALTH_CHECKS on, a dead one is replaced at first use anyway. So
      it is kept unless every database has health checks on.

    tests/api/test_sinais.py checks reuse, a backend killed between requests
    and an aged connection through the real handler.
    """
    if not settings.DEBUG:
        request_started.disconnect(reset_queries)
    if all(b.get("CONN_HEALTH_CHECKS") for b in settings.DATABASES.values()):
        request_started.disconnect(close_old_connections)


def por_token(request: HttpRequest) -> bool:
    """An API call that DRF's TokenAuthentication will decide (its own test
    of the header, so the two can never disagree)."""
    if not e_da_api(request.path_info):
        return False
    # (It reads only request.META, which a Django request has too.)
    partes = get_authorization_header(request).split()  # type: ignore[arg-type]
    return bool(partes) and partes[0].lower() == b"token"


class _CadeiaDaApi(BaseHandler):
    def __init__(self) -> None:
        super().__init__()
        # BaseHandler.load_middleware reads settings.MIDDLEWARE and nothing
        # else says which list to load: lend it the API's list while it
        # builds the chain (once, at startup, before any request).
        completa = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.MIDDLEWARE_DA_API
        try:
            self.load_middleware()
        finally:
            settings.MIDDLEWARE = completa


class MiddlewareDaApi:
    """The API chain's one middleware: the seven it replaces, in their order.

    MetricasHttp > SecurityMiddleware > RequestIdMiddleware > LimiteDoCorpo >
    TextoImpossivel > CommonMiddleware > XFrameOptionsMiddleware >
    ConflitoEntreTransacoes > ConexaoPerdida (settings.MIDDLEWARE's order,
    browser-only ones left out). tests/api/test_cadeia.py compares its answers
    with the full chain's, header by header, and that these are still the
    full chain without the browser's middlewares.
    """

    SUBSTITUI = (
        "relatorios.operacao.metricas.MetricasHttp",
        "django.middleware.security.SecurityMiddleware",
        "relatorios.operacao.logs.RequestIdMiddleware",
        "relatorios.api.entrada.LimiteDoCorpo",
        "relatorios.api.entrada.TextoImpossivel",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
        "relatorios.operacao.conflitos.ConflitoEntreTransacoes",
        "relatorios.operacao.conexao.ConexaoPerdida",
    )

    def __init__(self, get_response: Callable[[HttpRequest], Any]):
        self.get_response = get_response
        self.metricas = Metrics.get_instance()
        # Only their public hooks are called; never their __call__.
        self.seguranca = SecurityMiddleware(get_response)
        self.comum = CommonMiddleware(get_response)
        self.quadros = XFrameOptionsMiddleware(get_response)
        self.conflito = ConflitoEntreTransacoes(get_response)
        self.conexao = ConexaoPerdida(get_response)
        # Django turns an exception into a response at each layer it stacks;
        # here at the same two depths as in the full chain: what Security's
        # request hook raises (a bad Host when redirecting to HTTPS) still
        # gets counted, and what the guards and CommonMiddleware raise (a bad
        # Host, too many query fields) still gets the request id and the
        # security headers. The guards answer their refusals themselves.
        self._seguro = convert_exception_to_response(self._com_seguranca)
        self._guardado = convert_exception_to_response(
            LimiteDoCorpo(TextoImpossivel(self._por_dentro))
        )

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        inicio = Time()
        resposta: Any = self._seguro(request)
        contar_resposta(self.metricas, request, resposta, inicio)
        return resposta

    def _com_seguranca(self, request: HttpRequest) -> HttpResponseBase:
        resposta: Any = self.seguranca.process_request(request)
        if resposta is None:
            valor = logs.request_id_valido(request.headers.get(logs.CABECALHO))
            token = logs.definir_request_id(valor)
            try:
                resposta = self._guardado(request)
            finally:
                logs.restaurar_request_id(token)
            resposta[logs.CABECALHO] = valor
        final: HttpResponseBase = self.seguranca.process_response(request, resposta)
        return final

    def _por_dentro(self, request: HttpRequest) -> Any:
        resposta: Any = self.comum.process_request(request)
        if resposta is None:
            resposta = self.get_response(request)
        resposta = self.quadros.process_response(request, resposta)
        return self.comum.process_response(request, resposta)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponseBase | None:
        """A view's exception: the lost connection's 503 or the deadlock
        409, else counted by type (as the full chain's innermost-first order
        has it)."""
        resposta = self.conexao.process_exception(request, exception)
        if resposta is None:
            resposta = self.conflito.process_exception(request, exception)
        if resposta is None:
            self.metricas.exceptions_by_type.labels(type=type(exception).__name__).inc()
        return resposta
