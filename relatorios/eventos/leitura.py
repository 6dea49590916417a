"""Reads of relatorio_eventos: where a stream starts, what it missed, retention.

Ids follow commit order (relatorios/banco/sql/relatorios_publicar.sql), so
"the tenant's events with id > n" is everything committed after event n,
and nothing else. Synchronous (Django's connection): the streams call these
through `sync_to_async` for the moment of the read only.
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
    """One published event, as NOTIFY carries it or the table holds it."""

    id: int
    tenant_id: int
    job_id: int | None
    tipo: str
    em: str | None
    # None when the event was too large for NOTIFY: read it from the table.
    dados: dict[str, Any] | None

    @classmethod
    def da_notificacao(cls, texto: Any) -> Aviso:
        return cls(
            id=int(texto["id"]),
            tenant_id=int(texto["tenant"]),
            job_id=None if texto.get("job") is None else int(texto["job"]),
            tipo=str(texto["tipo"]),
            em=texto.get("em"),
            dados=texto.get("dados"),
        )


@dataclass(frozen=True)
class Retomada:
    """What a stream sends first: the events after the client's id, and
    whether that id was still in the table (False: some may be gone)."""

    eventos: list[Aviso]
    conhecido: bool
    # The tenant's newest event id when it was read: the stream's position
    # when the client gave none.
    ultimo: int


def _avisos(linhas: list[Any]) -> list[Aviso]:
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


_COLUNAS = "id, tenant_id, job_id, tipo, relatorios_instante(criado_em), dados"


def eventos_apos(
    *, tenant_id: int, apos: int, job_id: int | None = None, lote: int = LOTE
) -> list[Aviso]:
    """The tenant's (or one of its jobs') events after id `apos`, oldest first
    (index relatorio_eventos_tenant)."""
    filtro = "" if job_id is None else "AND job_id = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT {_COLUNAS} FROM relatorio_eventos
             WHERE tenant_id = %s AND id > %s {filtro}
             ORDER BY id LIMIT %s
            """,
            [tenant_id, apos, *([] if job_id is None else [job_id]), lote],
        )
        return _avisos(cursor.fetchall())


def retomar(*, tenant_id: int, apos: int | None, job_id: int | None = None) -> Retomada:
    """A stream's start: its position, and, with the client's Last-Event-ID
    (`apos`), the first batch of what came after it.

    `conhecido` is False when the client's event is no longer in the table
    (past RELATORIOS_EVENTOS_RETENCAO_S, or an id that was never this
    tenant's): events between it and the oldest kept may be gone.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT (SELECT max(id) FROM relatorio_eventos WHERE tenant_id = %s),
                   EXISTS (SELECT 1 FROM relatorio_eventos
                            WHERE id = %s AND tenant_id = %s)
            """,
            [tenant_id, apos or 0, tenant_id],
        )
        ultimo, conhecido = cursor.fetchone()
    eventos = (
        []
        if apos is None
        else eventos_apos(tenant_id=tenant_id, apos=apos, job_id=job_id)
    )
    return Retomada(eventos=eventos, conhecido=bool(conhecido), ultimo=ultimo or 0)


def ler(evento_id: int) -> Aviso | None:
    """One event by id (one too large for its NOTIFY)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_COLUNAS} FROM relatorio_eventos WHERE id = %s", [evento_id]
        )
        linhas = cursor.fetchall()
    return _avisos(linhas)[0] if linhas else None


def expurgar(*, agora: datetime | None = None) -> int:
    """Delete the events older than RELATORIOS_EVENTOS_RETENCAO_S, oldest
    first, in bounded batches; returns how many.

    A prefix of ids: `criado_em` is read under the publishing lock, so it
    grows with the id, and "the client's event is still here" then means
    "everything after it is still here" (`retomar`).
    """
    total = 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                """
                DELETE FROM relatorio_eventos
                 WHERE id IN (SELECT id FROM relatorio_eventos
                               WHERE criado_em < coalesce(%s, now())
                                     - make_interval(secs => %s)
                               ORDER BY id LIMIT 10000)
                """,
                [agora, settings.RELATORIOS_EVENTOS_RETENCAO_S],
            )
            total += cursor.rowcount
            if cursor.rowcount < 10000:
                break
    if total:
        logger.info("eventos expurgados", extra={"eventos": total})
    return total
