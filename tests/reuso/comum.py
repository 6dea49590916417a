"""Running reports in this process, as the worker's `calcular` does, with
reuse on or off, and counting the chunks actually computed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings

from relatorios import tipos
from relatorios.jobs import execucao
from relatorios.models import Tenant
from relatorios.tipos.base import Contexto, TipoRelatorio
from tests import helpers

SP = ZoneInfo("America/Sao_Paulo")


def relatorio(tenant: Tenant, tipo: str = "vendas", **brutos: Any) -> str:
    """The result's JSON text, as the worker would produce it now."""
    definicao = tipos.obter(tipo)
    params = definicao.normalizar(brutos)
    ctx = Contexto(job_id=0, tenant_id=tenant.pk, fuso_horario=tenant.fuso_horario)
    return json.dumps(execucao.calcular(definicao, ctx, params, timeout_s=60))


def sem_reuso(tenant: Tenant, tipo: str = "vendas", **brutos: Any) -> str:
    with override_settings(RELATORIOS_REUSO_PARTES=False):
        return relatorio(tenant, tipo, **brutos)


@contextmanager
def contando(monkeypatch: pytest.MonkeyPatch, *nomes: str) -> Iterator[list[Any]]:
    """The chunks each named type computed (not reused) while inside."""
    calculadas: list[Any] = []
    for nome in nomes:
        cls: type[TipoRelatorio] = type(tipos.obter(nome))
        original = cls.gerar_parte

        def gerar_parte(
            self: TipoRelatorio,
            cursor: Any,
            ctx: Any,
            params: Any,
            parte: Any,
            original: Any = original,
        ) -> Any:
            calculadas.append(parte)
            return original(self, cursor, ctx, params, parte)

        monkeypatch.setattr(cls, "gerar_parte", gerar_parte)
    yield calculadas


def com_vendas(tenant: Tenant) -> None:
    """One store and a sale at 00:30 local of the 1st of each month of 2025."""
    loja = helpers.criar_lojas(tenant, "L1")[0]
    vendedor, produto = helpers.criar_vendedor(tenant), helpers.criar_produto(tenant)
    for mes in range(1, 13):
        helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime(2025, mes, 1, 0, 30, tzinfo=SP),
            valor=f"{mes}.00",
        )


def venda_atrasada(tenant: Tenant, data_hora: datetime, valor: str) -> None:
    """A sale written late, in the tenant's one store, by a new seller."""
    helpers.criar_venda(
        loja=tenant.lojas.get(),
        vendedor=helpers.criar_vendedor(tenant),
        produto=helpers.criar_produto(tenant),
        data_hora=data_hora,
        valor=valor,
    )
