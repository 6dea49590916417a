"""A result's values as text for people: on the job page (and in emails) and
in the CSV, each by its column's format (`tipos.colunas.Coluna`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils import formats

from relatorios import tipos
from relatorios.tipos.colunas import Coluna


def colunas(tipo: str, primeira_linha: Mapping[str, Any] | None) -> tuple[Coluna, ...]:
    """The type's columns. A job of a type no longer registered (a deployment
    dropped it) shows the keys of its first line, as text."""
    try:
        return tipos.obter(tipo).colunas
    except tipos.TipoDesconhecido:
        return tuple(Coluna(str(campo), str(campo)) for campo in primeira_linha or {})


# --- On the page ------------------------------------------------------------------

_DIA = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MES = re.compile(r"(\d{4})-(\d{2})")


def na_pagina(coluna: Coluna, valor: Any) -> str:
    """A value as a pt-BR reader expects it: 1.234,50, 31/01/2026 and 12,34%."""
    if valor is None:
        return ""
    if coluna.formato == "periodo" and isinstance(valor, str):
        if dia := _DIA.fullmatch(valor):
            return f"{dia[3]}/{dia[2]}/{dia[1]}"
        if mes := _MES.fullmatch(valor):
            return f"{mes[2]}/{mes[1]}"
    if coluna.numerica:
        numero = _decimal(valor)
        if numero is not None and numero.is_finite():
            if coluna.formato == "percentual":
                texto = _numero_na_pagina(numero.scaleb(2)) + "%"
                if coluna.variacao and numero:
                    # A minus sign, not a hyphen; a plus on a rise.
                    texto = texto.replace("-", "−") if numero < 0 else "+" + texto
                return texto
            return _numero_na_pagina(numero)
    return str(valor)


def sentido(coluna: Coluna, valor: Any) -> str:
    """ "alta", "queda" or "" : how the page colours a change (`variacao`)."""
    if not coluna.variacao:
        return ""
    numero = _decimal(valor)
    if numero is None or not numero.is_finite() or numero == 0:
        return ""
    return "alta" if numero > 0 else "queda"


def chave_de_ordem(coluna: Coluna, valor: Any) -> str:
    """What the page's sorting compares in a cell: the number itself for a
    numeric column ("1234.5", not "1.234,50"), the value as stored for the
    others (a period "2026-01-05" sorts as text)."""
    if valor is None:
        return ""
    return str(valor)


def _numero_na_pagina(numero: Decimal) -> str:
    # As many decimal places as the value carries: money keeps its cents.
    casas = max(0, -int(numero.as_tuple().exponent))
    return str(
        formats.number_format(
            numero, decimal_pos=casas, use_l10n=True, force_grouping=True
        )
    )


def linha_na_pagina(cols: Sequence[Coluna], linha: Mapping[str, Any]) -> list[str]:
    return [na_pagina(c, linha.get(c.campo)) for c in cols]


def linha_na_tabela(
    cols: Sequence[Coluna], linha: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """The job page's cells: the text shown, the key it sorts by, and its
    CSS classes ("num" for a number, "alta"/"queda" for a change)."""
    celulas = []
    for c in cols:
        valor = linha.get(c.campo)
        classes = " ".join(
            x for x in ("num" if c.numerica else "", sentido(c, valor)) if x
        )
        celulas.append((na_pagina(c, valor), chave_de_ordem(c, valor), classes))
    return celulas


def totais_na_pagina(
    cols: Sequence[Coluna], totais: Mapping[str, Any] | None
) -> list[str] | None:
    """The totals row under the table: each column that has a total."""
    if not totais or not cols:
        return None
    celulas = [
        na_pagina(c, totais[c.campo]) if c.numerica and c.campo in totais else ""
        for c in cols
    ]
    celulas[0] = celulas[0] or "Total"
    return celulas


# --- In the CSV ---------------------------------------------------------------------

# A cell starting with one of these is a formula to a spreadsheet program
# (CSV injection); store and product names come from the tenant's ERP.
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def na_planilha(coluna: Coluna, valor: Any) -> str:
    """A value for a pt-BR spreadsheet: decimal comma, no thousands separator,
    dates as ISO (every spreadsheet program reads them, and they sort)."""
    if valor is None:
        return ""
    if coluna.numerica:
        numero = _decimal(valor)
        if numero is not None:
            return str(valor).replace(".", ",")
    texto = str(valor)
    if texto.startswith(_FORMULA):
        return "'" + texto
    return texto


def _decimal(valor: Any) -> Decimal | None:
    if isinstance(valor, bool):
        return None
    try:
        return Decimal(str(valor))
    except InvalidOperation:
        return None
