"""Facts of the database every layer reads: its clock, its jsonb, its bigint."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import connection

# The largest id a bigint column holds: a larger one in a URL is a 404, not a
# DataError.
ID_MAXIMO = 2**63 - 1


def agora_do_banco() -> datetime:
    # Delays and schedules are relative to the database clock, which every
    # guard compares with (the scheduler's tests inject theirs instead).
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def json_do_banco(valor: Any) -> Any:
    # Django loads jsonb as text for its JSONField; raw cursors see the text.
    return json.loads(valor) if isinstance(valor, str) else valor
