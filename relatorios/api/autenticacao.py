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

A miss is one raw statement (token joined to its user), not DRF's ORM query:
with 200 tenants over three workers and a 5 s validity about half the
requests of the bench's mix miss, and building and compiling that query was a
fifth of their samples.

What the cache holds, and what `request.user` is, is a `Chamador`: the few
fields of the user the API reads (id, tenant, e-mail...), frozen. No view,
permission or log line of the API needs a model instance, and building two
(then copying them for every request, so concurrent requests could never
share one) was ~30% of what a status read cost beyond a bare DRF view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

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


@dataclass(frozen=True, slots=True)
class Chamador:
    """The user of a token call, as the API sees it: immutable, so one
    instance serves every request of its token (and threads may share it).

    It answers what DRF and the API ask of `request.user` (`pk`,
    `is_authenticated`, `tenant_id`, `email`...); it is not a model
    instance, and nothing of the API saves or relates it.
    """

    id: int
    tenant_id: int | None
    username: str
    email: str
    is_active: bool
    is_staff: bool
    is_superuser: bool

    is_authenticated: ClassVar[bool] = True
    is_anonymous: ClassVar[bool] = False

    @property
    def pk(self) -> int:
        return self.id

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


# The user's columns a Chamador takes, in its fields' order.
_CAMPOS_DO_USUARIO = (
    "id",
    "tenant_id",
    "username",
    "email",
    "is_active",
    "is_staff",
    "is_superuser",
)

# key -> (valid until, caller). A dict read or write is atomic under the
# GIL; two threads missing the same key at once both query and one wins,
# which is harmless.
_cache: dict[str, tuple[float, Chamador]] = {}


class TokenComCache(TokenAuthentication):
    """TokenAuthentication that remembers a valid token for a few seconds.

    `request.user` is the token's `Chamador`; `request.auth` its key.
    """

    def authenticate_credentials(self, key: str) -> tuple[Chamador, str]:
        validade_s = float(settings.RELATORIOS_CACHE_TOKEN_S)
        if validade_s <= 0:
            return ler_chamador(key), key
        agora = relogio()
        entrada = _cache.get(key)
        if entrada is not None and entrada[0] > agora:
            return entrada[1], key
        # Raises AuthenticationFailed for an unknown key or inactive user:
        # nothing is cached then.
        chamador = ler_chamador(key)
        if len(_cache) >= MAX_ENTRADAS:
            _podar(agora)
        _cache[key] = (agora + validade_s, chamador)
        return chamador, key


def ler_chamador(key: str) -> Chamador:
    """DRF's `authenticate_credentials` (same checks, same errors) in one raw
    statement."""
    with connection.cursor() as cursor:
        cursor.execute(_consulta(), [key])
        linha = cursor.fetchone()
    if linha is None:
        raise exceptions.AuthenticationFailed(gettext_lazy("Invalid token."))
    chamador = Chamador(*linha)
    if not chamador.is_active:
        mensagem = gettext_lazy("User inactive or deleted.")
        raise exceptions.AuthenticationFailed(mensagem)
    return chamador


_CONSULTAS: list[str] = []


def _consulta() -> str:
    """The token-and-user statement, built once from the models' metadata."""
    if _CONSULTAS:
        return _CONSULTAS[0]
    modelo_token: Any = TokenComCache().get_model()
    modelo_usuario: Any = get_user_model()
    colunas = ", ".join(
        f'u."{modelo_usuario._meta.get_field(campo).column}"'
        for campo in _CAMPOS_DO_USUARIO
    )
    token_fk = modelo_token._meta.get_field("user").column
    sql = (
        f"SELECT {colunas}"
        f' FROM "{modelo_token._meta.db_table}" t'
        f' JOIN "{modelo_usuario._meta.db_table}" u'
        f' ON u."{modelo_usuario._meta.pk.column}" = t."{token_fk}"'
        ' WHERE t."key" = %s'
    )
    _CONSULTAS.append(sql)
    return sql


def esquecer_tudo() -> None:
    """Empties this process's cache (tests; a deployment restarts workers)."""
    _cache.clear()


def _podar(agora: float) -> None:
    for chave, (ate, _) in list(_cache.items()):
        if ate <= agora:
            _cache.pop(chave, None)
    if len(_cache) >= MAX_ENTRADAS:
        _cache.clear()
