"""TRANSITION: the .xlsx writer moved to `relatorios.apresentacao.excel`.

Kept, under an import-linter exception (pyproject.toml), only for
`relatorios/notificacoes/entrega.py`, which another branch is changing:
once it imports `relatorios.apresentacao.excel`, delete this module and the
exception.
"""

from __future__ import annotations

from relatorios.apresentacao.excel import (
    TIPO_DE_CONTEUDO,
    gravar_xlsx,
    nome_do_arquivo_xlsx,
)

__all__ = ["TIPO_DE_CONTEUDO", "gravar_xlsx", "nome_do_arquivo_xlsx"]
