"""What authenticated an open stream, and whether it still holds.

A stream is authenticated when it opens (relatorios/api/eventos.py); it may
stay open for hours. A token deleted, a user deactivated or moved to another
tenant, a session deleted (a logout, support ending it) or a password
changed must end it as they end the API's and the pages' access. So each
stream keeps its `Credencial`, and the process's reader checks all of them
at once, in one statement, every RELATORIOS_EVENTOS_REVISAO_S
(`central.Central.revisar`).

A session's password is compared by a digest of its stored hash (Django's own
sessions are tied to it the same way: `get_session_auth_hash`), so the
process keeps no password hash of anyone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psycopg
from django.apps import apps
from django.contrib.auth import get_user_model


@dataclass(frozen=True, slots=True)
class Credencial:
    """A token's key, or a session's key and the user's password digest then
    (a password change ends the sessions, as Django's do; not the tokens,
    which the API goes on accepting)."""

    token: str | None
    sessao: str | None
    senha: str | None


def digest_da_senha(senha_guardada: str) -> str:
    """The digest of a user's stored password hash, as the SQL computes it."""
    return hashlib.md5(senha_guardada.encode(), usedforsecurity=False).hexdigest()


Chave = tuple[int, int, Credencial]


async def validas(
    conexao: psycopg.AsyncConnection[Any], chaves: Iterable[Chave]
) -> set[Chave]:
    """The (user, tenant, credential) triples that still hold: the user
    active, of that tenant, its password unchanged, and its token (or its
    session, unexpired) still there. One statement for all."""
    lista = list(chaves)
    if not lista:
        return set()
    cursor = await conexao.execute(
        _consulta(),
        [
            [usuario for usuario, _, _ in lista],
            [tenant for _, tenant, _ in lista],
            [c.token for _, _, c in lista],
            [c.sessao for _, _, c in lista],
            [c.senha for _, _, c in lista],
        ],
    )
    return {lista[int(linha[0]) - 1] for linha in await cursor.fetchall()}


_CONSULTAS: list[str] = []


def _consulta() -> str:
    """Built once from the models' metadata (the user, DRF's token, Django's
    database sessions: the settings' SESSION_ENGINE)."""
    if _CONSULTAS:
        return _CONSULTAS[0]
    usuario: Any = get_user_model()
    token: Any = apps.get_model("authtoken", "Token")
    sessao: Any = apps.get_model("sessions", "Session")
    u = usuario._meta
    sql = f"""
        SELECT c.i
          FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::text[])
               WITH ORDINALITY AS c(usuario_id, tenant_id, token, sessao, senha, i)
          JOIN "{u.db_table}" u
            ON u."{u.pk.column}" = c.usuario_id
           AND u."{u.get_field("is_active").column}"
           AND u."{u.get_field("tenant").column}" = c.tenant_id
           AND (c.senha IS NULL
                OR md5(u."{u.get_field("password").column}") = c.senha)
         WHERE (c.token IS NULL OR EXISTS (
                   SELECT 1 FROM "{token._meta.db_table}" t
                    WHERE t."key" = c.token
                      AND t."{token._meta.get_field("user").column}" = c.usuario_id))
           AND (c.sessao IS NULL OR EXISTS (
                   SELECT 1 FROM "{sessao._meta.db_table}" s
                    WHERE s.session_key = c.sessao AND s.expire_date > now()))
    """
    _CONSULTAS.append(sql)
    return sql
