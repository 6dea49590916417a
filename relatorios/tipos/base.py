"""The contract every report type fulfils; the worker drives it chunk by chunk."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.backends.utils import CursorWrapper
from rest_framework import serializers

from relatorios.tipos import normalizacao
from relatorios.tipos.colunas import Coluna, Grafico
from relatorios.tipos.sql import limites_do_dia

Parte = dict[str, Any]
Parcial = dict[str, Any]


@dataclass(frozen=True)
class Contexto:
    """What a report may know about its request besides the parameters."""

    job_id: int
    tenant_id: int
    fuso_horario: str


class TipoRelatorio(ABC):
    """A report type: its name, its parameters, how to compute it in chunks,
    and what people and programs see of its result.

    The worker calls `partes` once (a cursor outside any transaction: at most a
    small query), then `gerar_parte` for each chunk (each in its own read-only
    transaction under the type's statement timeout, saving progress in
    between), then `combinar` with the partial results in order.
    Partial results must be JSON (money as strings): they are checkpointed.

    Its identity is declared on the class, every part of it (a system check,
    `tipos.verificacao`, refuses a type missing one): `colunas`, `grafico`,
    `resultado`, `exemplo` and `tabelas_erp` below.
    """

    tipo: ClassVar[str]
    titulo: ClassVar[str]
    # A line of the result as people see it, in order: on the job page, in
    # emails, in the CSV and in the .xlsx (its formats, widths, totals).
    colunas: ClassVar[tuple[Coluna, ...]]
    # The chart above the table on the job page; None: the table alone.
    grafico: ClassVar[Grafico | None]
    # The `resultado` of a `pronto` job in the API and in its OpenAPI
    # contract: a serializer whose `linhas` hold `colunas` (documentation:
    # nothing is serialized through it).
    resultado: ClassVar[type[serializers.Serializer]]
    # One `resultado`, the contract's example (it must fit `resultado`).
    exemplo: ClassVar[dict[str, Any]]
    # The ERP tables (models of relatorios/models/erp.py) its SQL reads.
    tabelas_erp: ClassVar[tuple[type[models.Model], ...]]
    # False when `agrupar` does not change the result (it is then left out of
    # the normalized parameters, so that such requests share one job).
    usa_agrupar: ClassVar[bool] = True
    # Whether a chunk's partial result, once computed, may serve every later
    # request of the same shape whose range contains the chunk, while the ERP
    # rows it read are unchanged (relatorios/jobs/reuso.py). False for a type
    # whose chunk is not determined by its own bounds and the parameters but
    # the range: a snapshot up to the range's end, a figure over the whole
    # range (a distinct count), chunks shaped by the range.
    partes_reutilizaveis: ClassVar[bool] = True
    # None: RELATORIOS_VALIDADE_S / RELATORIOS_TIMEOUT_S.
    validade_s: ClassVar[int | None] = None
    timeout_s: ClassVar[int | None] = None

    def normalizar(self, brutos: Any) -> dict[str, Any]:
        return normalizacao.normalizar(
            brutos,
            periodo_max_anos=settings.RELATORIOS_PERIODO_MAX_ANOS,
            usa_agrupar=self.usa_agrupar,
        )

    def validade(self) -> int:
        return self.validade_s or settings.RELATORIOS_VALIDADE_S

    def periodo_sugerido(self, hoje: date) -> tuple[date, date]:
        """The period the managers' request form starts with: this month so far."""
        return hoje.replace(day=1), hoje

    def dados_de_exemplo(self, cursor: CursorWrapper, tenant_id: int) -> None:
        """Sample rows for the ERP tables only this type reads, made from the
        tenant's generated stores, products and sales: `manage.py gerar_dados`
        calls it after those, with PostgreSQL's random() seeded. The types
        that read only the shared tables have none."""
        return

    def periodo_da_parte(
        self, ctx: Contexto, parte: Parte
    ) -> tuple[datetime, datetime]:
        """[de, ate): the instants of the dated ERP rows (PERIODO_DA_LINHA) one
        chunk reads; a stored chunk depends on the versions of their months.

        This default fits a chunk of `meses`: local midnight of its first day
        to local midnight after its last, as its SQL reads (`limites_do_dia`).
        """
        limites = limites_do_dia(parte["inicio"], parte["fim"], ctx.fuso_horario)
        return limites["de"], limites["ate"]

    def timeout(self) -> int:
        return self.timeout_s or settings.RELATORIOS_TIMEOUT_S

    @abstractmethod
    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        """The chunks of this request, in result order (JSON, stable across retries)."""

    @abstractmethod
    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        """Compute one chunk in SQL."""

    @abstractmethod
    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        """The final `resultado` from the partial results, in chunk order."""


def texto(valor: Decimal | int | None) -> str:
    """Money and other decimals travel as strings, never as floats."""
    return str(valor if valor is not None else Decimal("0"))


def dinheiro(ajuda: str = "") -> serializers.DecimalField:
    """A `resultado` field of money: a decimal string in the API, never a float."""
    return serializers.DecimalField(
        max_digits=20, decimal_places=2, coerce_to_string=True, help_text=ajuda
    )


def somar(parciais: Sequence[Parcial], campo: str, tipo: type = Decimal) -> Any:
    """Adds one total across chunks (each already summed by SQL)."""
    total = tipo(0)
    for parcial in parciais:
        total += tipo(parcial["totais"][campo])
    return total


def meses(inicio: str, fim: str) -> list[Parte]:
    """Splits [inicio, fim] (ISO dates) at month boundaries."""
    d0, d1 = date.fromisoformat(inicio), date.fromisoformat(fim)
    partes: list[Parte] = []
    atual = d0
    while atual <= d1:
        proximo = (atual.replace(day=1) + timedelta(days=32)).replace(day=1)
        ultimo = min(d1, proximo - timedelta(days=1))
        partes.append({"inicio": atual.isoformat(), "fim": ultimo.isoformat()})
        atual = proximo
    return partes
