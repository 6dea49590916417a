"""What a report type declares about how people see its result: its columns
(key, title, format, and their place in the .xlsx) and the chart above its
table. Each type lists its own (`TipoRelatorio.colunas`, `.grafico`).

Declarations only: the page, the emails, the CSV and the .xlsx that read
them are in `relatorios.apresentacao`, so all show the same columns in the
same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# "dinheiro" is a decimal in reais: the page and the CSV show it as any
# decimal; the .xlsx gives it a money format. "percentual" is a ratio
# ("0.1234"): 12,34% on the page and in the .xlsx, the ratio in the CSV.
Formato = Literal["texto", "periodo", "inteiro", "decimal", "dinheiro", "percentual"]
FORMATOS: tuple[Formato, ...] = (
    "texto",
    "periodo",
    "inteiro",
    "decimal",
    "dinheiro",
    "percentual",
)
NUMERICOS: tuple[Formato, ...] = ("inteiro", "decimal", "dinheiro", "percentual")

# How the .xlsx's Total row shows a column the result totals: "soma", a SUM
# over the column (cached with the result's total); "valor", the result's
# total itself, for what a sum of the lines is not (a ratio, a change).
Total = Literal["soma", "valor"]
TOTAIS: tuple[Total, ...] = ("soma", "valor")


@dataclass(frozen=True)
class Coluna:
    """One column of a result: its key in each line, its title, its format;
    in the .xlsx, its width (characters; None: by its format) and how its
    total is shown."""

    campo: str
    titulo: str
    formato: Formato = "texto"
    largura: int | None = None
    total: Total = "soma"
    # A change (a "percentual" against a period before): the page shows it
    # signed (+12,34% / −3,10%) and coloured up or down.
    variacao: bool = False

    @property
    def numerica(self) -> bool:
        return self.formato in NUMERICOS


# Columns several types share.
PERIODO = Coluna("periodo", "Período", "periodo")
LOJA = Coluna("loja", "Loja")
# Names get room to be read.
LOJA_NOME = Coluna("loja_nome", "Nome da loja", largura=28)


@dataclass(frozen=True)
class Grafico:
    """How a type's result is drawn above its table on the job page.

    The lines are summed by `eixo` (and by `serie`, one line or bar set per
    value of it), in SQL (`apresentacao.grafico`); `valor` is a numeric
    column. `ordem` "eixo" keeps the axis in its natural order (periods in
    time), "menores"/"maiores" sorts by the value and keeps `limite` of them.
    `rotulo` names the axis's points when `eixo` is a code, `rotulo_da_serie`
    the series when `serie` is one. Each is a column of the type.
    """

    forma: Literal["linha", "barra"]
    titulo: str
    eixo: str
    valor: str
    serie: str | None = None
    rotulo: str | None = None
    # The name a series is shown by in the legend, when `serie` is a code.
    rotulo_da_serie: str | None = None
    ordem: Literal["eixo", "menores", "maiores"] = "eixo"
    limite: int | None = None
