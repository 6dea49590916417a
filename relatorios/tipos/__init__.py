"""The registry of report types: {tipo: TipoRelatorio}.

Adding a type is one module with a TipoRelatorio subclass, which declares
its whole identity (its SQL, columns, chart, API result shape, ERP tables:
`base.TipoRelatorio`), and one line in TIPOS below (or, for types that only
exist in a deployment or in the tests, a dotted path in
RELATORIOS_TIPOS_EXTRAS). A system check (`verificacao`) refuses a type
missing a part.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from relatorios.tipos.base import TipoRelatorio
from relatorios.tipos.comissoes import Comissoes
from relatorios.tipos.estoque import Estoque
from relatorios.tipos.fechamento import FechamentoMensal
from relatorios.tipos.vendas import Vendas

TIPOS: list[type[TipoRelatorio]] = [Vendas, Comissoes, Estoque, FechamentoMensal]


class TipoDesconhecido(LookupError):
    """No report type of that name."""


_registro: dict[str, TipoRelatorio] | None = None


def classes() -> list[type[TipoRelatorio]]:
    """The registered classes: the built-in ones, then the settings' extras."""
    return TIPOS + [import_string(p) for p in settings.RELATORIOS_TIPOS_EXTRAS]


def registro() -> dict[str, TipoRelatorio]:
    global _registro
    if _registro is None:
        _registro = {cls.tipo: cls() for cls in classes()}
    return _registro


def obter(tipo: str) -> TipoRelatorio:
    try:
        return registro()[tipo]
    except KeyError:
        raise TipoDesconhecido(tipo) from None


def titulo(tipo: str) -> str:
    """The type's title for people ("Vendas por período e loja"); the code
    itself for a type no longer registered."""
    try:
        return obter(tipo).titulo
    except TipoDesconhecido:
        return tipo


def _esquecer(*, setting: str, **kwargs: Any) -> None:
    global _registro
    if setting == "RELATORIOS_TIPOS_EXTRAS":
        _registro = None


setting_changed.connect(_esquecer)
