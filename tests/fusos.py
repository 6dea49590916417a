"""Calendar oracles for schedule tests: firings worked out from the calendar
and zoneinfo alone, among them a schedule whose next firings cross a DST
change, whatever day the tests run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

NOVA_YORK = "America/New_York"


@dataclass(frozen=True)
class Travessia:
    cron: str
    # The next three firings (UTC), and each on the zone's wall clock.
    disparos: list[datetime]
    locais: list[str]


def prazos(disparos: list[datetime], minutos: int, fuso: str) -> list[str]:
    """Each firing's deadline on the wall clock: the instant plus the
    deadline, which is not the wall clock plus it across a change."""
    return [local(d + timedelta(minutes=minutos), fuso) for d in disparos]


def local(instante: datetime, fuso: str) -> str:
    return f"{instante.astimezone(ZoneInfo(fuso)):%d/%m/%Y %H:%M}"


def travessia(agora: datetime, fuso: str = NOVA_YORK) -> Travessia:
    """Sundays of March or of November at 01:30, whichever's next three
    firings are not all on one UTC offset. New York springs forward on
    March's second Sunday at 02:00 and falls back on November's first (its
    01:30 happens twice and fires at the first pass): either way a firing at
    01:30 that day has its deadline (three hours later) across the change,
    where the wall clock plus three hours is an hour off."""
    for mes in (3, 11):
        disparos = _domingos(mes, time(1, 30), fuso, agora)
        offsets = {d.astimezone(ZoneInfo(fuso)).utcoffset() for d in disparos}
        if len(offsets) == 2:
            return Travessia(
                f"30 1 * {mes} 0", disparos, [local(d, fuso) for d in disparos]
            )
    raise AssertionError("March or November always crosses a change ahead")


def _domingos(mes: int, hora: time, fuso: str, agora: datetime) -> list[datetime]:
    zona = ZoneInfo(fuso)
    dia = agora.astimezone(zona).date()
    achados: list[datetime] = []
    while len(achados) < 3:
        if dia.month == mes and dia.weekday() == 6:
            # fold=0, zoneinfo's default: the first pass of a repeated hour;
            # in a gap, the offset from before it.
            instante = datetime.combine(dia, hora, tzinfo=zona).astimezone(UTC)
            if instante > agora:
                achados.append(instante)
        dia += timedelta(days=1)
    return achados


def ultimos_dias_do_mes(hora: time, fuso: str, agora: datetime) -> list[datetime]:
    """The next three last-days-of-the-month at `hora` on `fuso`'s clock."""
    zona = ZoneInfo(fuso)
    dia = agora.astimezone(zona).date()
    achados: list[datetime] = []
    while len(achados) < 3:
        if (dia + timedelta(days=1)).day == 1:
            instante = datetime.combine(dia, hora, tzinfo=zona).astimezone(UTC)
            if instante > agora:
                achados.append(instante)
        dia += timedelta(days=1)
    return achados


def hora_longe_de(agora: datetime, fuso: str) -> time:
    """A time of day twelve hours from now on `fuso`'s clock: a firing at it
    is never the one due in the seconds between a test's clock and the
    server's."""
    return time((agora.astimezone(ZoneInfo(fuso)).hour + 12) % 24, 30)
