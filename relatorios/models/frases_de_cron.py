"""A cron as a Brazilian manager says it: "de segunda a sexta, às 07:00",
"a cada 15 minutos", "todos os dias às 22:30", "nos dias 1 e 15, às 03:00".

cron-descriptor's Portuguese is Lisbon's ("somente de segunda-feira, ...,
e sexta-feira", "a cada dia") and it has no pt_BR catalogue, so the crons
people actually write (a time of day on some weekdays or days of the month,
every N minutes or hours) are phrased here, field by field; anything else
(`?`, `W`, stepped days, seconds that tick) returns None and the caller
falls back to the library's sentence, tidied (models.cron).

Pure functions of the cron's text: no clock, no database.
"""

from __future__ import annotations

import re

# Sunday is 0 (and 7), as in crontab(5).
DIAS = ["domingo", "segunda", "terça", "quarta", "quinta", "sexta", "sábado"]
# "às segundas", "aos sábados": the article agrees with the day.
PLURAIS = {
    0: "aos domingos",
    1: "às segundas",
    2: "às terças",
    3: "às quartas",
    4: "às quintas",
    5: "às sextas",
    6: "aos sábados",
}
DIAS_COMPLETOS = [
    "domingo",
    "segunda-feira",
    "terça-feira",
    "quarta-feira",
    "quinta-feira",
    "sexta-feira",
    "sábado",
]
MESES = [
    "",
    "janeiro",
    "fevereiro",
    "março",
    "abril",
    "maio",
    "junho",
    "julho",
    "agosto",
    "setembro",
    "outubro",
    "novembro",
    "dezembro",
]
ORDINAIS = {1: "primeira", 2: "segunda", 3: "terceira", 4: "quarta", 5: "quinta"}
ORDINAIS_MASC = {1: "primeiro", 2: "segundo", 3: "terceiro", 4: "quarto", 5: "quinto"}
NOMES_DE_DIA = {
    nome: i for i, nome in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])
}
NOMES_DE_MES = {
    nome: i
    for i, nome in enumerate(
        [
            "",
            "jan",
            "feb",
            "mar",
            "apr",
            "may",
            "jun",
            "jul",
            "aug",
            "sep",
            "oct",
            "nov",
            "dec",
        ]
    )
    if nome
}

_NUMERO = re.compile(r"\d{1,2}")


class _NaoSei(Exception):
    """A field this layer does not phrase: the caller falls back."""


def lista(itens: list[str]) -> str:
    """'a', 'a e b', 'a, b e c': a list as Portuguese writes it (no Oxford comma)."""
    if len(itens) <= 1:
        return "".join(itens)
    return f"{', '.join(itens[:-1])} e {itens[-1]}"


def frase(campos: list[str]) -> str | None:
    """The five fields (minute hour day month weekday) and an optional sixth,
    croniter's seconds, in words; None for a shape this layer leaves to the
    library."""
    if len(campos) not in (5, 6):
        return None
    segundo = campos[5] if len(campos) == 6 else "0"
    minuto, hora, dia, mes, semana = (c.lower() for c in campos[:5])
    try:
        if not _NUMERO.fullmatch(segundo):
            raise _NaoSei
        quando_no_dia, repete = _horas(minuto, hora, int(segundo))
        dias = _dias(dia, mes, semana)
    except (_NaoSei, ValueError, IndexError):
        return None
    if dias is None:  # every day
        if repete:
            return quando_no_dia
        return f"todos os dias {quando_no_dia}"
    return f"{dias}, {quando_no_dia}"


# --- the time of day -----------------------------------------------------------


def _numeros(
    campo: str, minimo: int, maximo: int, nomes: dict[str, int] | None = None
) -> list[int]:
    """A list of single values and plain ranges ('1,15', '1-5', '8-18') as
    numbers; anything with a step or a wildcard is not a list."""
    valores: list[int] = []
    for parte in campo.split(","):
        extremos = parte.split("-")
        if len(extremos) > 2:
            raise _NaoSei
        numeros = [_valor(e, nomes) for e in extremos]
        if any(not minimo <= n <= maximo for n in numeros):
            raise _NaoSei
        if len(numeros) == 2 and numeros[0] > numeros[1]:
            raise _NaoSei
        valores.extend(range(numeros[0], numeros[-1] + 1))
    return valores


def _valor(texto: str, nomes: dict[str, int] | None) -> int:
    if nomes and texto in nomes:
        return nomes[texto]
    if not texto.isdigit():
        raise _NaoSei
    return int(texto)


def _hhmm(hora: int, minuto: int, segundo: int = 0) -> str:
    if segundo:
        return f"{hora:02d}:{minuto:02d}:{segundo:02d}"
    return f"{hora:02d}:{minuto:02d}"


def _horas(minuto: str, hora: str, segundo: int) -> tuple[str, bool]:
    """The part of the day: ('às 07:00', False) or ('a cada 15 minutos', True)
    (True: it repeats within the day, so "todos os dias" goes unsaid)."""
    passo_minuto = re.fullmatch(r"(?:\*|0)/(\d{1,2})", minuto)
    if minuto == "*" or passo_minuto:
        if segundo:
            raise _NaoSei
        n = int(passo_minuto[1]) if passo_minuto else 1
        if not 1 <= n <= 59:
            raise _NaoSei
        texto = "a cada minuto" if n == 1 else f"a cada {n} minutos"
        return texto + _faixa_de_horas(hora, fim_minuto=(59 // n) * n), True
    minutos = _numeros(minuto, 0, 59)
    passo_hora = re.fullmatch(r"(?:\*|0)/(\d{1,2})", hora)
    if hora == "*" or passo_hora:
        n = int(passo_hora[1]) if passo_hora else 1
        if not 1 <= n <= 23 or segundo:
            raise _NaoSei
        texto = "a cada hora" if n == 1 else f"a cada {n} horas"
        if minutos != [0]:
            texto += f", aos {lista([f'{m:02d}' for m in minutos])} minutos"
        return texto, True
    horas = _numeros(hora, 0, 23)
    if len(minutos) == 1:
        instantes = [_hhmm(h, minutos[0], segundo) for h in horas]
    elif len(horas) == 1:
        instantes = [_hhmm(horas[0], m, segundo) for m in minutos]
    else:
        raise _NaoSei
    if len(instantes) > 6:
        # '0 8-18 * * *': eleven times read better as a range.
        if len(minutos) == 1 and horas == list(range(horas[0], horas[-1] + 1)):
            return (
                f"a cada hora, das {instantes[0]} às {instantes[-1]}",
                True,
            )
        raise _NaoSei
    return f"às {lista(instantes)}", False


def _faixa_de_horas(hora: str, *, fim_minuto: int) -> str:
    if hora == "*":
        return ""
    horas = _numeros(hora, 0, 23)
    if horas != list(range(horas[0], horas[-1] + 1)):
        raise _NaoSei
    return f", das {_hhmm(horas[0], 0)} às {_hhmm(horas[-1], fim_minuto)}"


# --- the days ------------------------------------------------------------------


def _dias(dia: str, mes: str, semana: str) -> str | None:
    """Which days, or None for every day."""
    meses = "" if mes == "*" else _meses(mes)
    if semana in ("*", "?") and dia in ("*", "?"):
        if not meses:
            return None
        return f"todos os dias de {meses}"
    if semana not in ("*", "?") and dia not in ("*", "?"):
        raise _NaoSei  # cron's "either": too subtle for a sentence
    if semana not in ("*", "?"):
        texto = _dias_da_semana(semana)
        if texto == "todos os dias" and not meses:
            return None
        return f"{texto}, em {meses}" if meses else texto
    return _dias_do_mes(dia, meses)


def _dias_da_semana(semana: str) -> str:
    achado = re.fullmatch(r"([0-7]|[a-z]{3})#([1-5])", semana)
    if achado:
        d = _valor(achado[1], NOMES_DE_DIA) % 7
        artigo = "no" if d in (0, 6) else "na"
        ordinais = ORDINAIS_MASC if d in (0, 6) else ORDINAIS
        return f"{artigo} {ordinais[int(achado[2])]} {DIAS_COMPLETOS[d]} do mês"
    achado = re.fullmatch(r"([0-7]|[a-z]{3})l", semana)
    if achado:
        d = _valor(achado[1], NOMES_DE_DIA) % 7
        ultimo = "no último" if d in (0, 6) else "na última"
        return f"{ultimo} {DIAS_COMPLETOS[d]} do mês"
    dias = sorted({d % 7 for d in _numeros(semana, 0, 7, NOMES_DE_DIA)})
    if dias == list(range(7)):
        return "todos os dias"
    if dias == [1, 2, 3, 4, 5]:
        return "de segunda a sexta"
    if dias == [0, 6]:
        return "nos fins de semana"
    if len(dias) >= 3 and dias == list(range(dias[0], dias[-1] + 1)):
        return f"de {DIAS[dias[0]]} a {DIAS[dias[-1]]}"
    # "às segundas, quartas e sextas", "às sextas e aos sábados": the
    # article said again only where it changes.
    itens, anterior = [], ""
    for d in dias:
        artigo, nome = PLURAIS[d].split(" ", 1)
        itens.append(nome if artigo == anterior else f"{artigo} {nome}")
        anterior = artigo
    return lista(itens)


def _dias_do_mes(dia: str, meses: str) -> str:
    de_que = f" de {meses}" if meses else " de cada mês"
    if dia == "l":
        return f"no último dia{de_que}"
    dias = _numeros(dia, 1, 31)
    if len(dias) >= 3 and dias == list(range(dias[0], dias[-1] + 1)):
        return f"do dia {dias[0]} ao dia {dias[-1]}{de_que}"
    if len(dias) == 1:
        return f"no dia {dias[0]}{de_que}"
    return f"nos dias {lista([str(d) for d in dias])}{de_que}"


def _meses(mes: str) -> str:
    meses = _numeros(mes, 1, 12, NOMES_DE_MES)
    return lista([MESES[m] for m in meses])
