"""How a result's lines are shown to people: columns, titles, number formats.

Shared by the job page (a pt-BR table), the CSV download (a pt-BR
spreadsheet) and the .xlsx, so all show the same columns in the same order;
and, per type, the chart the job page draws above its table. A type not
listed here still works: its columns are the keys of its first line, as
text, and it has no chart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from django.utils import formats

# "dinheiro" is a decimal in reais: the page and the CSV show it as any
# decimal; the .xlsx gives it a money format.
Formato = Literal["texto", "periodo", "inteiro", "decimal", "dinheiro"]


@dataclass(frozen=True)
class Coluna:
    """One column of a result: its key in each line, its title, its format."""

    campo: str
    titulo: str
    formato: Formato = "texto"

    @property
    def numerica(self) -> bool:
        return self.formato in ("inteiro", "decimal", "dinheiro")


_PERIODO = Coluna("periodo", "Período", "periodo")
_LOJA = Coluna("loja", "Loja")
_LOJA_NOME = Coluna("loja_nome", "Nome da loja")

COLUNAS: dict[str, tuple[Coluna, ...]] = {
    "vendas": (
        _PERIODO,
        _LOJA,
        _LOJA_NOME,
        Coluna("vendas", "Vendas", "inteiro"),
        Coluna("quantidade", "Quantidade", "inteiro"),
        Coluna("receita", "Receita (R$)", "dinheiro"),
    ),
    "comissoes": (
        _PERIODO,
        Coluna("vendedor_id", "Código do vendedor", "inteiro"),
        Coluna("vendedor", "Vendedor"),
        Coluna("taxa", "Taxa", "decimal"),
        Coluna("receita", "Receita (R$)", "dinheiro"),
        Coluna("comissao", "Comissão (R$)", "dinheiro"),
    ),
    "estoque": (
        _LOJA,
        _LOJA_NOME,
        Coluna("sku", "SKU"),
        Coluna("produto", "Produto"),
        Coluna("saldo_inicial", "Saldo inicial", "inteiro"),
        Coluna("entradas", "Entradas", "inteiro"),
        Coluna("saidas", "Saídas", "inteiro"),
        Coluna("saldo_final", "Saldo final", "inteiro"),
    ),
}


@dataclass(frozen=True)
class Grafico:
    """How a type's result is drawn above its table on the job page.

    The lines are summed by `eixo` (and by `serie`, one line or bar set per
    value of it), in SQL (`tipos.grafico`); `valor` is a numeric column.
    `ordem` "eixo" keeps the axis in its natural order (periods in time),
    "menores"/"maiores" sorts by the value and keeps `limite` of them.
    `rotulo` names the axis's points when `eixo` is a code.
    """

    forma: Literal["linha", "barra"]
    titulo: str
    eixo: str
    valor: str
    serie: str | None = None
    rotulo: str | None = None
    ordem: Literal["eixo", "menores", "maiores"] = "eixo"
    limite: int | None = None


# A type without an entry gets no chart, only its table.
GRAFICOS: dict[str, Grafico] = {
    "vendas": Grafico(
        "linha",
        "Receita por período, por loja",
        eixo="periodo",
        valor="receita",
        serie="loja",
    ),
    "comissoes": Grafico(
        "barra",
        "Comissão por vendedor",
        eixo="vendedor_id",
        rotulo="vendedor",
        valor="comissao",
        ordem="maiores",
        limite=20,
    ),
    "estoque": Grafico(
        "barra",
        "Produtos com menor saldo final",
        eixo="sku",
        rotulo="produto",
        valor="saldo_final",
        ordem="menores",
        limite=15,
    ),
}


def colunas(tipo: str, primeira_linha: Mapping[str, Any] | None) -> tuple[Coluna, ...]:
    if tipo in COLUNAS:
        return COLUNAS[tipo]
    return tuple(Coluna(str(campo), str(campo)) for campo in (primeira_linha or {}))


# --- On the page ------------------------------------------------------------------

_DIA = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MES = re.compile(r"(\d{4})-(\d{2})")


def na_pagina(coluna: Coluna, valor: Any) -> str:
    """A value as a pt-BR reader expects it: 1.234,50 and 31/01/2026."""
    if valor is None:
        return ""
    if coluna.formato == "periodo" and isinstance(valor, str):
        if dia := _DIA.fullmatch(valor):
            return f"{dia[3]}/{dia[2]}/{dia[1]}"
        if mes := _MES.fullmatch(valor):
            return f"{mes[2]}/{mes[1]}"
    if coluna.numerica:
        numero = _decimal(valor)
        if numero is not None:
            casas = max(0, -int(numero.as_tuple().exponent))
            return str(
                formats.number_format(
                    numero, decimal_pos=casas, use_l10n=True, force_grouping=True
                )
            )
    return str(valor)


def linha_na_pagina(cols: Sequence[Coluna], linha: Mapping[str, Any]) -> list[str]:
    return [na_pagina(c, linha.get(c.campo)) for c in cols]


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
