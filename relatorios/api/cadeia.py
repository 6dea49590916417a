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
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponseBase
from rest_framework.authentication import get_authorization_header

from relatorios.api.entrada import e_da_api


class HandlerWsgi(WSGIHandler):
    """Django's WSGI handler with the API's shorter chain beside the full one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cadeia_da_api = _CadeiaDaApi()

    def get_response(self, request: HttpRequest) -> HttpResponseBase:
        if por_token(request):
            return self.cadeia_da_api.get_response(request)
        return super().get_response(request)


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
