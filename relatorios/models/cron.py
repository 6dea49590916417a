"""A schedule's cron in words (pt-BR), on the tenant's clock.

The cron field's display, as `get_periodo_display()` is the period's: the
pages, the admin, the API (`descricao`) and the emails all show this one
sentence, "no dia 1 de cada mês, às 03:00 (horário de Brasília); próximo:
01/01/2027 03:00". It lives beside the model because the emails are written
in `notificacoes`, below `agendamentos`.

The crons people write are phrased in Brazilian Portuguese by
`frases_de_cron` ("de segunda a sexta, às 07:00"). The rest are
cron-descriptor's, in its Portuguese catalogue (pt_PT: the library has no
pt_BR), with its Lisbon turns replaced (`BRASILEIRO`). It takes
weekday and month names from the C library's LC_TIME, which a Python process
leaves at "C" (English) and which only a process-wide setlocale() with an
installed system locale could change; those names are swapped for Django's
own pt-BR translations.
"""

from __future__ import annotations

import calendar
import logging
import re
from datetime import datetime
from functools import cache, lru_cache

from cron_descriptor import CasingTypeEnum, Options, get_description
from django.utils import translation
from django.utils.dates import MONTHS, WEEKDAYS

from relatorios.models import frases_de_cron, relogio

logger = logging.getLogger(__name__)

# crontab(5)'s nicknames: croniter accepts them, cron-descriptor reads fields.
APELIDOS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def descrever(cron: str, fuso: str, proximo: datetime | None) -> str:
    """The cron in words, the zone it runs on, and its next firing there
    (None: paused or deleted)."""
    seguinte = (
        f"próximo: {no_fuso(proximo, fuso)}" if proximo else "sem próximo disparo"
    )
    return f"{em_palavras(cron)} ({relogio.nome_do_fuso(fuso)}); {seguinte}"


def no_fuso(instante: datetime, fuso: str) -> str:
    """An instant on the tenant's wall clock, as every schedule screen shows it."""
    return relogio.hora_local(instante, fuso)


@lru_cache(maxsize=1024)
def em_palavras(cron: str) -> str:
    """The cron alone in words: "no último dia de cada mês, às 03:00".

    Cached: a page or an admin list describes every schedule it shows, and
    cron-descriptor reads its catalogue from disk on each call.
    """
    campos = APELIDOS.get(cron.strip().lower(), cron).split()
    if (propria := frases_de_cron.frase(campos)) is not None:
        return propria
    if len(campos) == 6:
        # croniter's seconds are the sixth field (RELATORIOS_CRON_SEGUNDOS);
        # cron-descriptor reads six fields as Quartz's, seconds first.
        campos = [campos[5], *campos[:5]]
    opcoes = Options(
        CasingTypeEnum.LowerCase,
        # "às 03:00, a cada dia" rather than a bare "às 03:00" for a daily cron.
        verbose=True,
        locale_code="pt_PT",
        use_24hour_time_format=True,
    )
    try:
        texto = get_description(" ".join(campos), opcoes)
    except Exception:
        # Only crons croniter accepted get here, but the two parsers differ
        # at the edges (and raise ValueError or IndexError as well as their
        # own errors): a screen shows the cron itself rather than fail.
        logger.warning("cron sem descrição", extra={"cron": cron}, exc_info=True)
        texto = ""
    if not texto:
        return f"conforme o cron «{cron}»"
    nomes, padrao = _nomes_em_portugues()
    texto = padrao.sub(lambda m: nomes[m.group(0)], texto)
    for lisboa, brasil in BRASILEIRO:
        texto = texto.replace(lisboa, brasil)
    return texto


# cron-descriptor's pt_PT turns, as Brazil writes them (the fallback only).
BRASILEIRO = (
    (", e ", " e "),
    ("somente de ", ""),
    ("somente em ", "em "),
    ("a cada dia", "todos os dias"),
    ("no dia 1 e ", "nos dias 1 e "),
)


@cache
def _nomes_em_portugues() -> tuple[dict[str, str], re.Pattern[str]]:
    """The names cron-descriptor writes (lower case) to Django's pt-BR ones,
    and a pattern that finds them (built on first use: translations need
    the app registry)."""
    with translation.override("pt-br"):
        nomes = {
            calendar.day_name[dia].lower(): str(WEEKDAYS[dia]).lower()
            for dia in range(7)
        }
        nomes |= {
            calendar.month_name[mes].lower(): str(MONTHS[mes]).lower()
            for mes in range(1, 13)
        }
    return nomes, re.compile(r"\b(" + "|".join(map(re.escape, nomes)) + r")\b")
