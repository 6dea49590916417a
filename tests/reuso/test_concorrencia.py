"""Concurrent writers, and a store that is full, locked or missing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from django.db import connection

from relatorios.models import ParteGuardada, Tenant
from relatorios.tipos.vendas import Vendas
from tests.agendamentos.test_travas import em_paralelo
from tests.reuso.comum import SP, com_vendas, relatorio, sem_reuso, venda_atrasada

pytestmark = pytest.mark.django_db(transaction=True)

MARCO = {"inicio": "2025-03-01", "fim": "2025-03-31"}


def venda_de_marco(tenant: Tenant) -> None:
    venda_atrasada(tenant, datetime(2025, 3, 20, 12, tzinfo=SP), "77.77")


@pytest.mark.parametrize("quando", ["antes_do_sql", "depois_do_sql"])
def test_escrita_confirmada_durante_a_parte_nao_deixa_parte_velha_valida(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch, quando: str
) -> None:
    com_vendas(tenant)
    na_parte, seguir = threading.Event(), threading.Event()
    original = Vendas.gerar_parte

    def gerar_parte(
        self: Vendas, cursor: Any, ctx: Any, params: Any, parte: Any
    ) -> Any:
        # Held inside the chunk's transaction, before or after its SQL ran.
        if quando == "antes_do_sql":
            na_parte.set()
            seguir.wait(30)
        parcial = original(self, cursor, ctx, params, parte)
        if quando == "depois_do_sql":
            na_parte.set()
            seguir.wait(30)
        return parcial

    monkeypatch.setattr(Vendas, "gerar_parte", gerar_parte)
    thread, saida = em_paralelo(lambda: relatorio(tenant, **MARCO))
    assert na_parte.wait(30)
    venda_de_marco(tenant)  # commits while the chunk's transaction is open
    seguir.set()
    thread.join(30)
    monkeypatch.undo()

    # The chunk read one snapshot, taken before the write committed, even
    # when its SQL ran after the commit (REPEATABLE READ)...
    assert "77.77" not in saida["valor"]
    assert ParteGuardada.objects.filter(tenant=tenant).count() == 1
    # ...and that chunk, stored, is not trusted afterwards.
    depois = relatorio(tenant, **MARCO)
    assert "77.77" in depois
    assert depois == sem_reuso(tenant, **MARCO)


def test_orcamento_zero_nao_guarda_e_o_resultado_e_o_mesmo(
    tenant: Tenant, ajustes: Callable[..., None]
) -> None:
    com_vendas(tenant)
    ajustes(RELATORIOS_REUSO_ORCAMENTO_BYTES=0)

    primeiro = relatorio(tenant, inicio="2025-01-01", fim="2025-12-31")
    segundo = relatorio(tenant, inicio="2025-01-01", fim="2025-12-31")

    assert not ParteGuardada.objects.exists()
    assert (
        primeiro == segundo == sem_reuso(tenant, inicio="2025-01-01", fim="2025-12-31")
    )


def test_orcamento_despeja_as_menos_usadas_recentemente(
    tenant: Tenant, ajustes: Callable[..., None]
) -> None:
    com_vendas(tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-01-31")
    tamanho = ParteGuardada.objects.get().tamanho
    # Room for about two chunks of this size.
    ajustes(RELATORIOS_REUSO_ORCAMENTO_BYTES=2 * tamanho + tamanho // 2)

    relatorio(tenant, inicio="2025-02-01", fim="2025-04-30")

    partes = ParteGuardada.objects.order_by("parte__inicio")
    assert [p.parte["inicio"] for p in partes] == ["2025-03-01", "2025-04-01"]


def test_armazem_travado_calcula_e_da_o_resultado_certo(tenant: Tenant) -> None:
    com_vendas(tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-02-28")
    venda_de_marco(tenant)
    travado, soltar = threading.Event(), threading.Event()

    def travar() -> None:
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("LOCK TABLE relatorio_partes IN ACCESS EXCLUSIVE MODE")
            travado.set()
            soltar.wait(60)
            cursor.execute("ROLLBACK")

    thread, _ = em_paralelo(travar)
    assert travado.wait(30)
    try:
        resultado = relatorio(tenant, inicio="2025-01-01", fim="2025-03-31")
    finally:
        soltar.set()
        thread.join(30)

    assert "77.77" in resultado
    assert resultado == sem_reuso(tenant, inicio="2025-01-01", fim="2025-03-31")


def test_armazem_ausente_calcula_e_da_o_resultado_certo(tenant: Tenant) -> None:
    com_vendas(tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-02-28")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE relatorio_partes RENAME TO relatorio_partes_fora")
    try:
        resultado = relatorio(tenant, inicio="2025-01-01", fim="2025-03-31")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE relatorio_partes_fora RENAME TO relatorio_partes"
            )

    assert resultado == sem_reuso(tenant, inicio="2025-01-01", fim="2025-03-31")
