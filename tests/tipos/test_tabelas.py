"""Each report type's `tabelas_erp` says what its SQL reads: PostgreSQL's
own plans of the statements the type runs name the same tables."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from relatorios import tipos
from relatorios.jobs import execucao
from relatorios.models import Tenant
from relatorios.tipos.base import Contexto
from tests import helpers

pytestmark = pytest.mark.django_db

# The report's queries; not the job machinery's around them (transactions,
# savepoints, each chunk's limits).
CONSULTAS = ("SELECT", "WITH")
LIMITES = "SELECT set_config"


def relacoes(plano: Any) -> Iterator[str]:
    if isinstance(plano, dict):
        if "Relation Name" in plano:
            yield plano["Relation Name"]
        for valor in plano.values():
            yield from relacoes(valor)
    elif isinstance(plano, list):
        for valor in plano:
            yield from relacoes(valor)


def lidas_pelo_sql(tenant: Tenant, tipo: str) -> set[str]:
    relatorio = tipos.obter(tipo)
    params = relatorio.normalizar({"inicio": "2026-01-01", "fim": "2026-01-31"})
    ctx = Contexto(job_id=0, tenant_id=tenant.pk, fuso_horario=tenant.fuso_horario)
    # Without the chunk store, whose own statements are not the type's.
    with (
        override_settings(RELATORIOS_REUSO_PARTES=False),
        CaptureQueriesContext(connection) as capturadas,
    ):
        execucao.calcular(relatorio, ctx, params, timeout_s=60)
    sqls = [execucao.sem_limites(q["sql"] or "") for q in capturadas.captured_queries]
    lidas: set[str] = set()
    with connection.cursor() as cursor:
        for sql in sqls:
            texto = sql.lstrip()
            if not texto.startswith(CONSULTAS) or texto.startswith(LIMITES):
                continue
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
            lidas.update(relacoes(cursor.fetchone()[0]))
    return lidas


@pytest.mark.parametrize("tipo", [cls.tipo for cls in tipos.TIPOS])
def test_o_sql_de_cada_tipo_le_as_tabelas_erp_que_ele_declara(
    tenant: Tenant, tipo: str
) -> None:
    loja = helpers.criar_lojas(tenant, "L1")[0]
    produto = helpers.criar_produto(tenant)
    helpers.criar_venda(
        loja=loja,
        vendedor=helpers.criar_vendedor(tenant),
        produto=produto,
        data_hora=datetime(2026, 1, 10, 15, tzinfo=UTC),
    )
    helpers.criar_movimento(
        loja=loja, produto=produto, data=date(2026, 1, 2), quantidade=5
    )
    declaradas = {m._meta.db_table for m in tipos.obter(tipo).tabelas_erp}

    assert lidas_pelo_sql(tenant, tipo) == declaradas
