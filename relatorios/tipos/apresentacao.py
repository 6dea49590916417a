"""TRANSITION: columns are declared in `relatorios.tipos.colunas`; their text
for people is `relatorios.apresentacao.celulas`.

Kept, under an import-linter exception (pyproject.toml), only for
`relatorios/notificacoes/email.py`, which another branch is changing: once
it imports those two, delete this module and the exception.
"""

from __future__ import annotations

from relatorios.apresentacao.celulas import colunas, na_pagina
from relatorios.tipos.colunas import Coluna

__all__ = ["Coluna", "colunas", "na_pagina"]
