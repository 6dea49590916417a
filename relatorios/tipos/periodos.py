"""Periods relative to a day: what "yesterday" or "last month" is on a given
local day. Schedules fire them (agendamentos.agenda) and computing ahead
recognizes them in the request history (jobs.antecipacao): one rule for both.
"""

from __future__ import annotations

from datetime import date, timedelta

from relatorios.models import Periodo
from relatorios.tipos.normalizacao import ErroDeParametro


def periodo_concreto(periodo: str, dia: date) -> tuple[date, date]:
    """(inicio, fim) of a relative period for a firing on local day `dia`."""
    ontem = dia - timedelta(days=1)
    if periodo == Periodo.ONTEM:
        return ontem, ontem
    if periodo == Periodo.SEMANA_ANTERIOR:
        segunda = dia - timedelta(days=dia.weekday() + 7)
        return segunda, segunda + timedelta(days=6)
    if periodo == Periodo.MES_ANTERIOR:
        fim = dia.replace(day=1) - timedelta(days=1)
        return fim.replace(day=1), fim
    if periodo == Periodo.MES_CORRENTE_ATE_ONTEM:
        # On the 1st, "this month up to yesterday" is yesterday's month.
        return ontem.replace(day=1), ontem
    if periodo == Periodo.ANO_ANTERIOR:
        return date(dia.year - 1, 1, 1), date(dia.year - 1, 12, 31)
    raise ErroDeParametro("periodo", f"período desconhecido: {periodo}")
