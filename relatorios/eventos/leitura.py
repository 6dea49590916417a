"""Reads of relatorio_eventos: where a stream starts, what it missed, retention.

Ids follow commit order only up to overlapping commits
(relatorios/banco/sql/relatorios_publicar.sql): the table may show id n+1
while n's commit is in flight. So a stream reads the table only up to its
process's position (`central.Central.posicao`: every id up to it settled)
and gets what comes after from its queue; then "the events with id > n" is
every event after n, each once. One job's events do follow its commits (the
job row's lock orders them), so a job's own stream may read past it.
Synchronous (Django's connection): the streams call these through
`sync_to_async` for the moment of the read only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection

from relatorios.banco.comum import json_do_banco

logger = logging.getLogger(__name__)

# One read of a catch-up returns at most this many events; a stream that is
# further behind reads again.
LOTE = 500


@dataclass(frozen=True)
class Aviso:
    """One published event, as the table holds it."""

    id: int
    tenant_id: int
    job_id: int | None
    tipo: str
    em: str | None
    dados: dict[str, Any]


@dataclass(frozen=True)
class Retomada:
    """What a stream sends first: the events after the client's id, and
    whether that id was still in the table (False: some may be gone)."""

    eventos: list[Aviso]
    conhecido: bool
    # The tenant's newest event id up to the bound (the id a stream shows
    # as its position when the client gave none; 0 when there is none).
    ultimo: int


def avisos(linhas: list[Any]) -> list[Aviso]:
    """Rows of `COLUNAS` as events."""
    return [
        Aviso(
            id=linha[0],
            tenant_id=linha[1],
            job_id=linha[2],
            tipo=linha[3],
            em=linha[4],
            dados=json_do_banco(linha[5]),
        )
        for linha in linhas
    ]


COLUNAS = "id, tenant_id, job_id, tipo, relatorios_instante(criado_em), dados"


def eventos_apos(
    *,
    tenant_id: int,
    apos: int,
    ate: int | None,
    job_id: int | None = None,
    lote: int = LOTE,
) -> list[Aviso]:
    """The tenant's (or one of its jobs') events after id `apos` and up to
    `ate` (the process's position; None for one job's, whose ids follow its
    commits), oldest first (index relatorio_eventos_tenant)."""
    filtros, parametros = "", [tenant_id, apos]
    if ate is not None:
        filtros += " AND id <= %s"
        parametros.append(ate)
    if job_id is not None:
        filtros += " AND job_id = %s"
        parametros.append(job_id)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT {COLUNAS} FROM relatorio_eventos
             WHERE tenant_id = %s AND id > %s {filtros}
             ORDER BY id LIMIT %s
            """,
            [*parametros, lote],
        )
        return avisos(cursor.fetchall())


def retomar(
    *, tenant_id: int, apos: int | None, ate: int | None, job_id: int | None = None
) -> Retomada:
    """A stream's start: its position, and, with the client's Last-Event-ID
    (`apos`), the first batch of what came after it, up to `ate`
    (`eventos_apos`).

    `conhecido` is False when the client's event is no longer in the table
    (past RELATORIOS_EVENTOS_RETENCAO_S, or an id that was never this
    tenant's): events between it and the oldest kept may be gone.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT (SELECT max(id) FROM relatorio_eventos
                     WHERE tenant_id = %s AND id <= coalesce(%s, id)),
                   EXISTS (SELECT 1 FROM relatorio_eventos
                            WHERE id = %s AND tenant_id = %s)
            """,
            [tenant_id, ate, apos or 0, tenant_id],
        )
        ultimo, conhecido = cursor.fetchone()
    eventos = (
        []
        if apos is None
        else eventos_apos(tenant_id=tenant_id, apos=apos, ate=ate, job_id=job_id)
    )
    return Retomada(eventos=eventos, conhecido=bool(conhecido), ultimo=ultimo or 0)


def expurgar(*, agora: datetime | None = None) -> int:
    """Delete the events older than RELATORIOS_EVENTOS_RETENCAO_S, oldest
    first, in bounded batches; returns how many.

    A prefix of ids: everything below the first event (by id) that is still
    young, so "the client's event is still here" means "everything after it
    is still here" (`retomar`). `criado_em` only nearly grows with the id
    (two overlapping commits may cross by microseconds), so the cut is by id.
    """
    total = 0
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT coalesce(
                (SELECT id FROM relatorio_eventos
                  WHERE criado_em >= coalesce(%s, now()) - make_interval(secs => %s)
                  ORDER BY id LIMIT 1),
                (SELECT max(id) + 1 FROM relatorio_eventos),
                0)
            """,
            [agora, settings.RELATORIOS_EVENTOS_RETENCAO_S],
        )
        (limite,) = cursor.fetchone()
        while True:
            cursor.execute(
                """
                DELETE FROM relatorio_eventos
                 WHERE id IN (SELECT id FROM relatorio_eventos WHERE id < %s
                               ORDER BY id LIMIT 10000)
                """,
                [limite],
            )
            total += cursor.rowcount
            if cursor.rowcount < 10000:
                break
    if total:
        logger.info("eventos expurgados", extra={"eventos": total})
    return total
