"""A result's values as people read them: on the page (pt-BR) and in the CSV."""

from __future__ import annotations

from typing import Any

import pytest

from relatorios.apresentacao import celulas
from relatorios.tipos.colunas import Coluna, Formato


@pytest.mark.parametrize(
    ("formato", "valor", "na_pagina", "na_planilha"),
    [
        ("dinheiro", "1234567.50", "1.234.567,50", "1234567,50"),
        ("inteiro", 1205, "1.205", "1205"),
        ("decimal", "0.0350", "0,0350", "0,0350"),
        ("percentual", "0.1234", "12,34%", "0,1234"),
        ("percentual", "-0.0500", "-5,00%", "-0,0500"),
        ("percentual", "1.5000", "150,00%", "1,5000"),
        ("percentual", None, "", ""),
        ("percentual", "NaN", "NaN", "NaN"),
        ("dinheiro", "NaN", "NaN", "NaN"),
        ("periodo", "2026-01", "01/2026", "2026-01"),
        ("periodo", "2026-01-31", "31/01/2026", "2026-01-31"),
        ("texto", "=HYPERLINK(1)", "=HYPERLINK(1)", "'=HYPERLINK(1)"),
    ],
)
def test_cada_formato_na_pagina_e_na_planilha(
    formato: Formato, valor: Any, na_pagina: str, na_planilha: str
) -> None:
    coluna = Coluna("c", "C", formato)

    assert celulas.na_pagina(coluna, valor) == na_pagina
    assert celulas.na_planilha(coluna, valor) == na_planilha
