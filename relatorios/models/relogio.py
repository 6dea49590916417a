"""One clock for support and managers: an instant on a tenant's wall clock,
with the zone named.

Support on the phone with a manager must read the same time the manager's
page shows. Every time of a tenant's object (the admin's lists and pages, the
job's timeline, the dashboard) goes through `horario`, which converts to the
tenant's zone and names it the way a Brazilian says it ("horário de
Brasília"); a zone without a common name is shown by its IANA name.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

BRASILIA = "America/Sao_Paulo"

# How people name a zone; the IANA name otherwise ("Europe/Lisbon").
NOMES_DOS_FUSOS = {BRASILIA: "horário de Brasília", "UTC": "UTC"}

FORMATO = "%d/%m/%Y %H:%M"
FORMATO_COM_SEGUNDOS = "%d/%m/%Y %H:%M:%S"


def nome_do_fuso(fuso: str) -> str:
    """'horário de Brasília' for America/Sao_Paulo, the zone's name otherwise."""
    return NOMES_DOS_FUSOS.get(fuso, fuso)


def no_horario(fuso: str) -> str:
    """'no horário de Brasília' / 'no fuso Europe/Lisbon', to end a sentence."""
    if fuso in NOMES_DOS_FUSOS:
        return f"no {NOMES_DOS_FUSOS[fuso]}"
    return f"no fuso {fuso}"


def no_fuso(instante: datetime, fuso: str) -> datetime:
    return instante.astimezone(ZoneInfo(fuso))


def hora_local(instante: datetime | None, fuso: str, *, segundos: bool = False) -> str:
    """'07/12/2026 16:44' on `fuso`'s wall clock (the zone named elsewhere)."""
    if instante is None:
        return "—"
    return no_fuso(instante, fuso).strftime(
        FORMATO_COM_SEGUNDOS if segundos else FORMATO
    )


def horario(instante: datetime | None, fuso: str, *, segundos: bool = False) -> str:
    """'07/12/2026 16:44 (horário de Brasília)': the time and its zone."""
    if instante is None:
        return "—"
    return f"{hora_local(instante, fuso, segundos=segundos)} ({nome_do_fuso(fuso)})"
