"""Token authentication with a short per-process cache of token -> user.

DRF's TokenAuthentication reads the token and its user on every request: one
round trip, and in the profiles of the submit and status endpoints about a
third of the Python time (building and compiling the ORM query). A manager's
client polls the same job every two seconds with the same token, so a few
seconds of memory remove almost all of it.

The price is a bound, documented in the README: a token that is deleted, or
whose user is deactivated or moved to another tenant, keeps working in a
process that has it cached for at most RELATORIOS_CACHE_TOKEN_S seconds
(default 5; 0 turns the cache off). Only successes are cached: an unknown
key is looked up every time, so a token created a moment ago works at once.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from rest_framework.authentication import TokenAuthentication

# Entries are only ever added for valid tokens, so the cache is bounded by
# the number of live tokens; this cap is a backstop, not a policy.
MAX_ENTRADAS = 10_000

# The clock is a module attribute so that tests can drive it: the bound is
# checked without sleeping. Monotonic, so that a wall-clock step can never
# stretch an entry's life.
relogio: Callable[[], float] = time.monotonic

# key -> (valid until, user, token). A dict read or write is atomic under the
# GIL; two threads missing the same key at once both query and one wins,
# which is harmless.
_cache: dict[str, tuple[float, Any, Any]] = {}


class TokenComCache(TokenAuthentication):
    """TokenAuthentication that remembers a valid token for a few seconds."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        validade_s = float(settings.RELATORIOS_CACHE_TOKEN_S)
        if validade_s <= 0:
            return super().authenticate_credentials(key)
        agora = relogio()
        entrada = _cache.get(key)
        if entrada is not None and entrada[0] > agora:
            _, usuario, token = entrada
        else:
            # Raises AuthenticationFailed for an unknown key or inactive user:
            # nothing is cached then.
            usuario, token = super().authenticate_credentials(key)
            if len(_cache) >= MAX_ENTRADAS:
                _podar(agora)
            _cache[key] = (agora + validade_s, usuario, token)
        # Each request gets its own copies: concurrent requests never share
        # (and could never change) the same model instances.
        usuario = copy.copy(usuario)
        token = copy.copy(token)
        token.user = usuario
        return usuario, token


def esquecer_tudo() -> None:
    """Empties this process's cache (tests; a deployment restarts workers)."""
    _cache.clear()


def _podar(agora: float) -> None:
    for chave, (ate, _, _) in list(_cache.items()):
        if ate <= agora:
            _cache.pop(chave, None)
    if len(_cache) >= MAX_ENTRADAS:
        _cache.clear()
