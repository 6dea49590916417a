"""A request's period and stores as people read them, the same on the job
page, in the .xlsx's header block and wherever a request is summed up."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from relatorios.models.frases_de_cron import MESES


def mes_por_extenso(iso: str) -> str:
    """ "2026-11" (or "2026-11-01") as "novembro de 2026"."""
    ano, mes = iso.split("-")[:2]
    return f"{MESES[int(mes)]} de {int(ano)}"


def resumo_dos_params(params: dict[str, Any]) -> str:
    """ "01/01/2026 a 31/01/2026 · por dia · lojas L001, L002"."""
    partes = []
    if "inicio" in params and "fim" in params:
        partes.append(periodo(params["inicio"], params["fim"]))
    if "agrupar" in params:
        partes.append("por mês" if params["agrupar"] == "mes" else "por dia")
    lojas = params.get("lojas") or []
    if not lojas:
        partes.append("todas as lojas")
    elif len(lojas) <= 5:
        partes.append("lojas " + ", ".join(lojas))
    else:
        partes.append(f"{len(lojas)} lojas")
    return " · ".join(partes)


def periodo(inicio: str, fim: str) -> str:
    """A whole calendar month by name ("novembro de 2026": the monthly
    close's period); any other period by its dates."""
    try:
        d0, d1 = date.fromisoformat(inicio), date.fromisoformat(fim)
    except ValueError:
        return f"{inicio} a {fim}"
    if (
        d0.day == 1
        and (d1 + timedelta(days=1)).day == 1
        and d0.replace(day=1) == d1.replace(day=1)
    ):
        return mes_por_extenso(inicio)
    return f"{data(inicio)} a {data(fim)}"


def data(iso: str) -> str:
    ano, mes, dia = iso.split("-")
    return f"{dia}/{mes}/{ano}"
