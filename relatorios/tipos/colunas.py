"""What a report type declares about how people see its result: its columns
(key, title, format) and the chart above its table.

Declarations only: the page, the CSV and the .xlsx that read them are in
`relatorios.apresentacao`, so all show the same columns in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
    value of it), in SQL (`apresentacao.grafico`); `valor` is a numeric column.
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
