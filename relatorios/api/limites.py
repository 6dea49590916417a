"""Per-token request limit of the API: a fixed window counted in one statement.

DRF's stock throttles keep a list of timestamps in Django's cache: a read and
a write per request, and with the only shared store we have (PostgreSQL, via
Django's database cache) that is a transaction of three or four statements.
Here it is one UPSERT that counts and answers at once, on an unlogged table,
exact across every web process and host. A per-process counter would cost
nothing but make the limit "between N and N × workers × hosts".

A fixed window lets a client spend up to twice the limit across a window
boundary; for an abuse limit that is fine, and it needs no history.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.db import connection
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

# Counts this request and says how many the window has now and how many
# seconds are left in it, on the database's clock.
_CONTAR = """
    INSERT INTO relatorio_limites_api AS l (usuario_id, janela, pedidos)
    VALUES (%(usuario)s, floor(extract(epoch FROM now()) / %(janela)s)::bigint, 1)
    ON CONFLICT (usuario_id) DO UPDATE
       SET pedidos = CASE WHEN l.janela = EXCLUDED.janela THEN l.pedidos + 1 ELSE 1 END,
           janela = EXCLUDED.janela
    RETURNING pedidos,
              (l.janela + 1) * %(janela)s - extract(epoch FROM now())
"""


class LimiteExcedido(exceptions.Throttled):
    """429 with Retry-After; the handler shapes it as {"erro": ...}."""


class LimitePorToken(BaseThrottle):
    """RELATORIOS_API_LIMITE requests per RELATORIOS_API_JANELA_S per user."""

    def allow_request(self, request: Request, view: Any) -> bool:
        limite = settings.RELATORIOS_API_LIMITE
        usuario_id = getattr(request.user, "pk", None)
        if limite <= 0 or usuario_id is None:
            # Off, or not authenticated: the 401 comes from authentication.
            return True
        janela_s = max(1, int(settings.RELATORIOS_API_JANELA_S))
        with connection.cursor() as cursor:
            cursor.execute(_CONTAR, {"usuario": usuario_id, "janela": janela_s})
            pedidos, restante = cursor.fetchone()
        if pedidos <= limite:
            return True
        espera = max(1, math.ceil(float(restante)))
        raise LimiteExcedido(
            wait=espera,
            detail=(
                f"limite de {limite} pedidos a cada {janela_s} s excedido: "
                f"tente de novo em {espera} s"
            ),
        )
