"""One middleware list; the API's token calls take it without the browser's.

A client app's call under /relatorios/ with `Authorization: Token ...` uses
none of what serves browsers: static files, sessions, CSRF, Django's
authentication middleware, the no-store header of signed-in pages, messages,
the Content-Security-Policy of pages, the login lockout. DRF decides such a
call by its token alone (valid: that user; invalid: 401), never falling back
to the session, so those eight only cost time (CSRF alone, which reads the
cookies of every call, ~2% of a status read's instructions).

`settings.MIDDLEWARE` is the one list. It names each browser middleware
through `so_do_navegador`: a subclass of the real one (Django's system
checks still find SessionMiddleware and the others in the list) that
changes nothing but its constructor, which raises `MiddlewareNotUsed` — the
documented way for a middleware to leave a chain — while the API's chain is
being built. So the WSGI handler loads the list twice, both times through
Django's own `load_middleware`, and settings are never changed: the full
chain for everything else (the pages, the admin, the manager's page polling
a job's status with its session, a call with no or another kind of
credentials), and for token calls the same list without the browser's
middlewares, each of the others a layer of its own, in its order. A
middleware added to the list runs in both chains unless it is named through
`so_do_navegador`.

What the second chain buys over one chain whose browser middlewares step
aside for token calls (measured with callgrind, docs/arquitetura.md, "One
middleware list"): the eight layers a token call would still cross.

Some checks look for a middleware by its exact name in the list. Two would
then warn wrongly: Django's CSRF deploy check (security.W003) and django-axes'
(axes.W002); settings silence them and `verificar_middlewares`
(relatorios.W009) asks the same of the classes. One would pass wrongly, the
CSRF cookie's (security.W016): `verificar_cookie_do_csrf` (relatorios.W010)
asks it again. The session cookie's still warn through the sessions app
(security.W010 and W013 instead of W012 and W015).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import axes.middleware
import csp.middleware
import django.contrib.auth.middleware
import django.contrib.messages.middleware
import django.contrib.sessions.middleware
import django.middleware.csrf
import whitenoise.middleware
from django.conf import settings
from django.core import checks
from django.core.exceptions import MiddlewareNotUsed
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_started
from django.db import close_old_connections, reset_queries
from django.http import HttpRequest, HttpResponseBase
from django.utils.module_loading import import_string
from rest_framework.authentication import get_authorization_header

from relatorios.api.entrada import e_da_api
from relatorios.operacao import cabecalhos

T = TypeVar("T", bound=type)


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


# True while HandlerWsgi builds the API's chain (at start, in one thread).
_montando_a_da_api: ContextVar[bool] = ContextVar("montando_a_da_api", default=False)


def so_do_navegador(classe: T) -> T:
    """`classe`, left out of the API's chain: its constructor raises Django's
    `MiddlewareNotUsed` while that chain is built, and is `classe`'s
    otherwise. Nothing else of `classe` changes."""

    real: Any = classe

    def __init__(self: Any, get_response: Callable[..., Any]) -> None:
        if _montando_a_da_api.get():
            raise MiddlewareNotUsed("só do navegador")
        real.__init__(self, get_response)

    membros = {
        "__init__": __init__,
        "__doc__": f"{classe.__name__}, left out of the API's token calls.",
        "__module__": __name__,
    }
    return type(classe.__name__, (classe,), membros)  # type: ignore[return-value]


class HandlerWsgi(WSGIHandler):
    """Django's WSGI handler with a second chain, built from the same list,
    for the API's token calls."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cadeia_da_api = BaseHandler()
        marca = _montando_a_da_api.set(True)
        try:
            self.cadeia_da_api.load_middleware()
        finally:
            _montando_a_da_api.reset(marca)

    def get_response(self, request: HttpRequest) -> HttpResponseBase:
        if por_token(request):
            return self.cadeia_da_api.get_response(request)
        return super().get_response(request)


# The browser's middlewares, as settings.MIDDLEWARE names them.
WhiteNoiseMiddleware = so_do_navegador(whitenoise.middleware.WhiteNoiseMiddleware)
SessionMiddleware = so_do_navegador(
    django.contrib.sessions.middleware.SessionMiddleware
)
AuthenticationMiddleware = so_do_navegador(
    django.contrib.auth.middleware.AuthenticationMiddleware
)
CsrfViewMiddleware = so_do_navegador(django.middleware.csrf.CsrfViewMiddleware)
SemCacheComUsuario = so_do_navegador(cabecalhos.SemCacheComUsuario)
MessageMiddleware = so_do_navegador(
    django.contrib.messages.middleware.MessageMiddleware
)
CSPMiddleware = so_do_navegador(csp.middleware.CSPMiddleware)
AxesMiddleware = so_do_navegador(axes.middleware.AxesMiddleware)

# The checks settings silence (they look for these exact names), by class.
_PROCURADAS = (
    ("security.W003", django.middleware.csrf.CsrfViewMiddleware),
    ("axes.W002", axes.middleware.AxesMiddleware),
)


def verificar_middlewares(**kwargs: Any) -> list[checks.CheckMessage]:
    """CSRF's and django-axes' middlewares are in MIDDLEWARE, named directly
    or through this module."""
    classes = [import_string(caminho) for caminho in settings.MIDDLEWARE]
    return [
        checks.Warning(
            f"{classe.__module__}.{classe.__name__} não está em MIDDLEWARE "
            f"(nem por relatorios.api.cadeia)",
            hint=f"o aviso {silenciado}, silenciado em settings, é este",
            id="relatorios.W009",
        )
        for silenciado, classe in _PROCURADAS
        if not any(isinstance(c, type) and issubclass(c, classe) for c in classes)
    ]


def verificar_cookie_do_csrf(**kwargs: Any) -> list[checks.CheckMessage]:
    """Django's security.W016 (a CSRF cookie not secure-only), which looks
    for CsrfViewMiddleware by its exact name and so would pass here."""
    if settings.CSRF_USE_SESSIONS or settings.CSRF_COOKIE_SECURE is True:
        return []
    return [
        checks.Warning(
            "CsrfViewMiddleware está em MIDDLEWARE (por relatorios.api.cadeia) "
            "e CSRF_COOKIE_SECURE não é True",
            hint="DJANGO_SECURE_COOKIES=true (docs/implantacao.md, deploy checklist)",
            id="relatorios.W010",
        )
    ]
