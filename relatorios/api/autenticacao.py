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

A miss is one raw statement (token joined to its user, instances built by the
models' own `from_db`), not DRF's ORM query: with 200 tenants over three
workers and a 5 s validity about half the requests of the bench's mix miss,
and building and compiling that query was a fifth of their samples.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy
from rest_framework import exceptions
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
            return self._ler(key)
        agora = relogio()
        entrada = _cache.get(key)
        if entrada is not None and entrada[0] > agora:
            _, usuario, token = entrada
        else:
            # Raises AuthenticationFailed for an unknown key or inactive user:
            # nothing is cached then.
            usuario, token = self._ler(key)
            if len(_cache) >= MAX_ENTRADAS:
                _podar(agora)
            _cache[key] = (agora + validade_s, usuario, token)
        # Each request gets its own copies: concurrent requests never share
        # (and could never change) the same model instances.
        usuario = copy.copy(usuario)
        token = copy.copy(token)
        token.user = usuario
        return usuario, token

    def _ler(self, key: str) -> tuple[Any, Any]:
        """DRF's `authenticate_credentials` (same checks, same errors) in one
        raw statement."""
        sql, n_token = _consulta(self.get_model())
        with connection.cursor() as cursor:
            cursor.execute(sql, [key])
            linha = cursor.fetchone()
        if linha is None:
            raise exceptions.AuthenticationFailed(gettext_lazy("Invalid token."))
        modelo_token = self.get_model()
        token: Any = modelo_token.from_db(
            connection.alias, _CAMPOS[modelo_token], linha[:n_token]
        )
        modelo_usuario = get_user_model()
        usuario = modelo_usuario.from_db(
            connection.alias, _CAMPOS[modelo_usuario], linha[n_token:]
        )
        if not usuario.is_active:
            mensagem = gettext_lazy("User inactive or deleted.")
            raise exceptions.AuthenticationFailed(mensagem)
        token.user = usuario
        return usuario, token


# model -> its concrete fields' attnames, in column order (what from_db takes).
_CAMPOS: dict[Any, list[str]] = {}
_CONSULTAS: dict[Any, tuple[str, int]] = {}


def _consulta(modelo_token: Any) -> tuple[str, int]:
    """The token-and-user statement, built once from the models' metadata."""
    pronta = _CONSULTAS.get(modelo_token)
    if pronta is not None:
        return pronta
    modelo_usuario = get_user_model()
    colunas = []
    for modelo, apelido in ((modelo_token, "t"), (modelo_usuario, "u")):
        campos = modelo._meta.concrete_fields
        _CAMPOS[modelo] = [campo.attname for campo in campos]
        colunas += [f'{apelido}."{campo.column}"' for campo in campos]
    token_fk = modelo_token._meta.get_field("user").column
    sql = (
        f"SELECT {', '.join(colunas)}"
        f' FROM "{modelo_token._meta.db_table}" t'
        f' JOIN "{modelo_usuario._meta.db_table}" u'
        f' ON u."{modelo_usuario._meta.pk.column}" = t."{token_fk}"'
        ' WHERE t."key" = %s'
    )
    pronta = (sql, len(modelo_token._meta.concrete_fields))
    _CONSULTAS[modelo_token] = pronta
    return pronta


def esquecer_tudo() -> None:
    """Empties this process's cache (tests; a deployment restarts workers)."""
    _cache.clear()


def _podar(agora: float) -> None:
    for chave, (ate, _, _) in list(_cache.items()):
        if ate <= agora:
            _cache.pop(chave, None)
    if len(_cache) >= MAX_ENTRADAS:
        _cache.clear()
