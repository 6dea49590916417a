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
rows, `RelatorioParcial`). The status read stays the one statement it was;
only a running job whose progress is past 0 (a chunk is done) costs one
more, `ler` (a column of the status statement instead, a CASE over a
correlated subquery, made every status read ~0.3 ms slower to plan even
when it evaluated to NULL: measured).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import connection

from relatorios import tipos
from relatorios.banco.comum import json_do_banco

logger = logging.getLogger(__name__)

# The pieces of a running job's partial result: its type and parameters,
# its split, how many chunks are done and their partial results in order,
# read through the unique (job_id, parte). Rows past `feitas` (none: the
# checkpoint and the rows are written by one statement) are left out.
_PECAS = """
    SELECT j.tipo, j.params, j.checkpoint -> 'partes',
           (j.checkpoint ->> 'feitas')::int,
           (SELECT jsonb_agg(p.parcial ORDER BY p.parte)
              FROM relatorio_parciais p
             WHERE p.job_id = j.id
               AND p.parte < (j.checkpoint ->> 'feitas')::int)
      FROM relatorio_jobs j
     WHERE j.id = %s AND j.tenant_id = %s AND j.status = 'executando' COLLATE "C"
"""


def ligado() -> bool:
    """RELATORIOS_RESULTADO_PARCIAL (on by default; off for the B11 bench's
    baseline and for deployments that want the old status)."""
    return bool(settings.RELATORIOS_RESULTADO_PARCIAL)


def ler(*, job_id: int, tenant_id: int) -> dict[str, Any] | None:
    """The partial result of a running job of the tenant, or None (not
    running any more, nothing done yet, or pieces that do not add up)."""
    with connection.cursor() as cursor:
        cursor.execute(_PECAS, [job_id, tenant_id])
        linha = cursor.fetchone()
    if linha is None:
        return None
    tipo, params, partes, feitas, parciais = linha
    return montar(
        {
            "tipo": tipo,
            "params": json_do_banco(params),
            "partes": json_do_banco(partes),
            "feitas": feitas,
            "parciais": json_do_banco(parciais),
        },
        job_id=job_id,
    )


def montar(pecas: dict[str, Any] | None, *, job_id: int) -> dict[str, Any] | None:
    """The partial result from `ler`'s pieces, or None (nothing done yet,
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
