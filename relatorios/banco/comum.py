"""Facts of the database every layer reads: its clock, its jsonb, its bigint,
and which of its errors mean "run the transaction again"."""

from __future__ import annotations

import functools
import json
import logging
import random
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from django.db import DatabaseError, connection, transaction

logger = logging.getLogger(__name__)

# The largest id a bigint column holds: a larger one in a URL is a 404, not a
# DataError.
ID_MAXIMO = 2**63 - 1

# SQLSTATEs of a transaction PostgreSQL chose to abort so that others could go
# on: the victim of a deadlock, and the loser of a serialization conflict.
# Nothing it wrote remains, so running it again is safe.
_REPETIVEIS = frozenset({"40P01", "40001"})

# Attempts of a @repetivel function; between them a short random pause, so the
# two sides of a deadlock do not meet again in the same order.
TENTATIVAS = 5

P = ParamSpec("P")
R = TypeVar("R")


def agora_do_banco() -> datetime:
    # Delays and schedules are relative to the database clock, which every
    # guard compares with (the scheduler's tests inject theirs instead).
    # now() is the transaction's start: the same for every call inside one.
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def instante_do_banco() -> datetime:
    """The database clock at this statement (clock_timestamp()), not at the
    transaction's start: two calls in one transaction differ."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def json_do_banco(valor: Any) -> Any:
    # Django loads jsonb as text for its JSONField; raw cursors see the text.
    return json.loads(valor) if isinstance(valor, str) else valor


def conflito_repetivel(erro: BaseException) -> bool:
    """Did PostgreSQL abort this transaction only to break a deadlock or a
    serialization conflict? (Django wraps psycopg's error: look down the chain.)"""
    atual: BaseException | None = erro
    while atual is not None:
        if getattr(atual, "sqlstate", None) in _REPETIVEIS:
            return True
        atual = atual.__cause__ or atual.__context__
    return False


def repetivel(funcao: Callable[P, R]) -> Callable[P, R]:
    """Run `funcao` in its own transaction, again if PostgreSQL aborted it as a
    deadlock victim or serialization loser (up to TENTATIVAS times).

    Inside a transaction someone else opened, it runs once as part of it: only
    the owner of the outermost transaction can run the whole of it again. The
    last attempt's error propagates (the API answers it with a 409).
    """

    @functools.wraps(funcao)
    def envolvida(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            return funcao(*args, **kwargs)
        for tentativa in range(1, TENTATIVAS + 1):
            try:
                with transaction.atomic():
                    return funcao(*args, **kwargs)
            except DatabaseError as erro:
                if tentativa == TENTATIVAS or not conflito_repetivel(erro):
                    raise
                logger.warning(
                    "conflito entre transações; repetindo",
                    extra={"funcao": funcao.__qualname__, "tentativa": tentativa},
                )
                time.sleep(random.uniform(0.01, 0.05) * tentativa)
        raise AssertionError("unreachable")

    return envolvida
