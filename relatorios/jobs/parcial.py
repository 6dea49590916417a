"""A running job's partial result: the chunks it has finished, combined.

The worker checkpoints each finished chunk (`ciclo.registrar_progresso`: the
job's `checkpoint` says how the request splits and how many chunks are done,
each chunk's `Parcial` is a row of relatorio_parciais, written by the same
statement). Chunks finish in order, so the done ones are a prefix of the
split. This module turns that prefix into what a reader is shown, through the
type's own `combinar`, so a partial has the shape of the type's `resultado`:

    {"partes": {"feitas": 3, "total": 12},
     "cobre": {"inicio": "2026-01-01", "fim": "2026-03-31"},
     "resultado": <the type's combinar of the 3 chunks>}

It is built when read, not when written: combining k chunks after each of n
chunks would write n²/2 chunks' worth of jsonb (the reason the chunks are
rows, `RelatorioParcial`). The status read fetches the pieces in its own
statement (`COLUNA`), only for a running job with a chunk done; every other
status read evaluates one CASE to NULL.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from relatorios import tipos

logger = logging.getLogger(__name__)

# A column of the status read (`consultas.estado_do_job`, over relatorio_jobs):
# the pieces of the partial as one jsonb value, or NULL. The chunks' rows are
# read through the unique (job_id, parte); rows past `feitas` (none, as the
# checkpoint and the rows are written together) are not part of it.
COLUNA = """CASE WHEN relatorio_jobs.status = 'executando'
         AND (relatorio_jobs.checkpoint ->> 'feitas')::int > 0
    THEN jsonb_build_object(
        'tipo', relatorio_jobs.tipo,
        'params', relatorio_jobs.params,
        'partes', relatorio_jobs.checkpoint -> 'partes',
        'feitas', relatorio_jobs.checkpoint -> 'feitas',
        'parciais', (SELECT jsonb_agg(p.parcial ORDER BY p.parte)
                       FROM relatorio_parciais p
                      WHERE p.job_id = relatorio_jobs.id
                        AND p.parte < (relatorio_jobs.checkpoint ->> 'feitas')::int))
    END"""


def ligado() -> bool:
    """RELATORIOS_RESULTADO_PARCIAL (on by default; off for the B11 bench's
    baseline and for deployments that want the old status)."""
    return bool(settings.RELATORIOS_RESULTADO_PARCIAL)


def coluna() -> str:
    """`COLUNA`, or a NULL that costs nothing when partials are switched off."""
    return COLUNA if ligado() else "NULL::jsonb"


def montar(pecas: dict[str, Any] | None, *, job_id: int) -> dict[str, Any] | None:
    """The partial result from `COLUNA`'s pieces, or None (nothing done yet,
    a type no longer registered, or pieces that do not add up)."""
    if not pecas:
        return None
    partes = pecas.get("partes") or []
    parciais = pecas.get("parciais") or []
    feitas = pecas.get("feitas")
    if not isinstance(feitas, int) or not 0 < feitas == len(parciais) <= len(partes):
        return None
    try:
        tipo = tipos.obter(str(pecas.get("tipo")))
        resultado = tipo.combinar(pecas.get("params") or {}, parciais)
    except Exception:
        # A partial is a preview: one that cannot be combined is left out,
        # never a failed status read (the worker's own combine will tell).
        logger.warning(
            "resultado parcial não combinado", exc_info=True, extra={"job_id": job_id}
        )
        return None
    return {
        "partes": {"feitas": feitas, "total": len(partes)},
        "cobre": cobre(partes[:feitas]),
        "resultado": resultado,
    }


def cobre(feitas: list[Any]) -> dict[str, str] | None:
    """The part of the period the done chunks cover, when chunks are periods
    (`inicio`/`fim`, in order: `base.meses`); None for chunks of another kind
    (the monthly close's are its sources of figures)."""
    primeira, ultima = feitas[0], feitas[-1]
    if not all(
        isinstance(p, dict) and isinstance(p.get(c), str)
        for p, c in ((primeira, "inicio"), (ultima, "fim"))
    ):
        return None
    return {"inicio": primeira["inicio"], "fim": ultima["fim"]}
