"""Who is knocking: the client's address behind the configured proxies."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def ip_do_cliente(request: HttpRequest) -> str | None:
    """REMOTE_ADDR, or the X-Forwarded-For entry appended by our outermost proxy.

    Only entries our own proxies appended can be trusted (a client writes
    whatever it likes on the left), hence a count from the right
    (RELATORIOS_PROXIES_A_FRENTE) rather than the first entry.
    """
    proxies = settings.RELATORIOS_PROXIES_A_FRENTE
    if proxies > 0:
        cadeia = [
            parte.strip()
            for parte in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if parte.strip()
        ]
        if len(cadeia) >= proxies:
            return cadeia[-proxies]
    return request.META.get("REMOTE_ADDR")
