"""Admin template tags for jobs: a date hierarchy that never scans the table."""

from __future__ import annotations

import calendar
from datetime import date
from typing import Any

from django import template
from django.db.models import Max, Min
from django.utils import formats, timezone
from django.utils.text import capfirst

register = template.Library()


@register.inclusion_tag("admin/date_hierarchy.html")
def hierarquia_de_datas(cl: Any) -> dict[str, Any]:
    """Django's date hierarchy, with its choices taken from one MIN/MAX query.

    Django's own lists the distinct years, months or days present
    (`SELECT DISTINCT date_trunc(...)`), which reads every matching row: on
    millions of jobs, seconds per page view. Here the first and last dates of
    the current selection (the two ends of an index) bound the choices; a
    period in between may have no jobs, which costs one click, not a scan.
    """
    campo = cl.date_hierarchy
    ano_campo, mes_campo, dia_campo = (
        f"{campo}__year",
        f"{campo}__month",
        f"{campo}__day",
    )
    ano, mes, dia = (cl.params.get(c) for c in (ano_campo, mes_campo, dia_campo))

    def link(filtros: dict[str, Any]) -> str:
        return str(cl.get_query_string(filtros, [f"{campo}__"]))

    if ano and mes and dia:
        data = date(int(ano), int(mes), int(dia))
        return {
            "show": True,
            "back": {
                "link": link({ano_campo: ano, mes_campo: mes}),
                "title": capfirst(formats.date_format(data, "YEAR_MONTH_FORMAT")),
            },
            "choices": [
                {"title": capfirst(formats.date_format(data, "MONTH_DAY_FORMAT"))}
            ],
        }
    limites = cl.queryset.order_by().aggregate(primeiro=Min(campo), ultimo=Max(campo))
    if limites["primeiro"] is None:
        return {"show": False}
    primeiro = timezone.localtime(limites["primeiro"]).date()
    ultimo = timezone.localtime(limites["ultimo"]).date()
    if ano and mes:
        a, m = int(ano), int(mes)
        ultimo_dia = calendar.monthrange(a, m)[1]
        de = primeiro.day if (primeiro.year, primeiro.month) == (a, m) else 1
        ate = ultimo.day if (ultimo.year, ultimo.month) == (a, m) else ultimo_dia
        return {
            "show": True,
            "back": {"link": link({ano_campo: ano}), "title": str(ano)},
            "choices": [
                {
                    "link": link({ano_campo: ano, mes_campo: mes, dia_campo: d}),
                    "title": capfirst(
                        formats.date_format(date(a, m, d), "MONTH_DAY_FORMAT")
                    ),
                }
                for d in range(de, ate + 1)
            ],
        }
    if ano:
        a = int(ano)
        de = primeiro.month if primeiro.year == a else 1
        ate = ultimo.month if ultimo.year == a else 12
        return {
            "show": True,
            "back": {"link": link({}), "title": "Todas as datas"},
            "choices": [
                {
                    "link": link({ano_campo: ano, mes_campo: m}),
                    "title": capfirst(
                        formats.date_format(date(a, m, 1), "YEAR_MONTH_FORMAT")
                    ),
                }
                for m in range(de, ate + 1)
            ],
        }
    return {
        "show": True,
        "back": None,
        "choices": [
            {"link": link({ano_campo: str(a)}), "title": str(a)}
            for a in range(primeiro.year, ultimo.year + 1)
        ],
    }
