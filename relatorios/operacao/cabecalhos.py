"""What every page a signed-in person sees says to caches.

A manager's page, a job's result or a support screen is one person's view of
one tenant's data: no shared cache (a proxy, a CDN) may keep it, and the
browser must not keep it on disk for the next person at that computer
(`Cache-Control: private, no-store`). The admin's views already send that
(Django's `never_cache`); this covers our pages, today's and future ones,
without a decorator each. Responses that set their own Cache-Control (a
download, `/metrics`) keep it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control


class SemCacheComUsuario:
    """`Cache-Control: private, no-store` on every page to a signed-in user.

    Pages only (text/html): the JSON API answers the same whichever chain of
    middleware a call takes (api/cadeia.py), and its clients send a token a
    shared cache does not store answers for.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        resposta = self.get_response(request)
        # The user last: reading it loads the session (and adds Vary: Cookie).
        if (
            resposta.get("Content-Type", "").startswith("text/html")
            and not resposta.has_header("Cache-Control")
            and getattr(request, "user", None) is not None
            and request.user.is_authenticated
        ):
            patch_cache_control(resposta, private=True, no_store=True)
        return resposta
