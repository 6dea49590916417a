"""SQL fragments and parameters shared by the report types."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

# date_trunc(...) in the tenant's zone, printed as the period's label.
FORMATO_PERIODO = {"dia": "YYYY-MM-DD", "mes": "YYYY-MM"}
UNIDADE = {"dia": "day", "mes": "month"}


def filtro_lojas(params: Mapping[str, Any], alias: str = "l") -> str:
    """The store filter, when the request names stores (empty list: all)."""
    if not params["lojas"]:
        return ""
    return f"AND {alias}.codigo = ANY(%(lojas)s)"


def limites_do_dia(inicio: str, fim: str, fuso: str) -> dict[str, datetime]:
    """[de, ate): from local midnight of `inicio` to local midnight after `fim`.

    Computed here so that the query compares data_hora with two constants and
    walks the (tenant_id, data_hora) index as a plain range.
    """
    zona = ZoneInfo(fuso)
    return {
        "de": datetime.combine(date.fromisoformat(inicio), time(), zona),
        "ate": datetime.combine(
            date.fromisoformat(fim) + timedelta(days=1), time(), zona
        ),
    }
