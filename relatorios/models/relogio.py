"""One clock for support and managers: an instant on a tenant's wall clock,
with the zone named.

Support on the phone with a manager must read the same time the manager's
page shows. Every time of a tenant's object (the admin's lists and pages, the
job's timeline, the dashboard) goes through `horario`, which converts to the
tenant's zone and names it the way a Brazilian says it ("horário de
Brasília"); a zone without a common name is shown by its IANA name.
"""

from __future__ import annotations

from datetime import datetime, timedelta
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


def _contar(n: int, singular: str, plural: str) -> str:
    return f"{n} {singular if n == 1 else plural}"


def por_extenso(intervalo: timedelta) -> str:
    """'15 minutos', '1 hora e 30 minutos', '2 dias': a wait as people say it
    (never '0:15:00', never '0 minuto')."""
    segundos = max(0, int(intervalo.total_seconds()))
    if segundos < 60:
        return "menos de um minuto"
    minutos, horas, dias = segundos // 60 % 60, segundos // 3600 % 24, segundos // 86400
    partes = [
        texto
        for n, texto in (
            (dias, _contar(dias, "dia", "dias")),
            (horas, _contar(horas, "hora", "horas")),
            (minutos, _contar(minutos, "minuto", "minutos")),
        )
        if n
    ][:2]
    return " e ".join(partes)


def ha(instante: datetime | None, agora: datetime) -> str:
    """'há 3 minutos', 'agora há pouco' under a minute (not 'há 0 minuto')."""
    if instante is None:
        return "—"
    intervalo = agora - instante
    if intervalo < timedelta(minutes=1):
        return "agora há pouco"
    return f"há {por_extenso(intervalo)}"
