from __future__ import annotations

from datetime import datetime

import pytest
from django.db import connection

from relatorios.admin import painel
from relatorios.models import ParteGuardada, ReusoDoTenant, Tenant
from tests import helpers
from tests.reuso.comum import SP, com_vendas, contando, relatorio, sem_reuso

pytestmark = pytest.mark.django_db(transaction=True)


def test_ano_depois_de_ano_com_um_dia_a_mais_calcula_uma_parte(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    com_vendas(tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-12-14", agrupar="mes")

    with contando(monkeypatch, "vendas") as calculadas:
        resultado = relatorio(
            tenant, inicio="2025-01-01", fim="2025-12-15", agrupar="mes"
        )

    assert calculadas == [{"inicio": "2025-12-01", "fim": "2025-12-15"}]
    assert resultado == sem_reuso(
        tenant, inicio="2025-01-01", fim="2025-12-15", agrupar="mes"
    )
    contagem = ReusoDoTenant.objects.get(tenant=tenant)
    assert (contagem.acertos, contagem.falhas, contagem.guardadas) == (11, 13, 13)


def test_venda_atrasada_invalida_so_as_partes_do_seu_mes_utc(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    com_vendas(tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-12-31")
    loja = tenant.lojas.get()
    venda = helpers.criar_venda(
        loja=loja,
        vendedor=helpers.criar_vendedor(tenant),
        produto=helpers.criar_produto(tenant),
        data_hora=datetime(2025, 3, 10, tzinfo=SP),
        valor="99.99",
    )

    with contando(monkeypatch, "vendas") as calculadas:
        resultado = relatorio(tenant, inicio="2025-01-01", fim="2025-12-31")

    # February's chunk too: in the tenant's zone it ends at 03:00 UTC of
    # March 1st, so it reads (and depends on) March's UTC month.
    assert calculadas == [
        {"inicio": "2025-02-01", "fim": "2025-02-28"},
        {"inicio": "2025-03-01", "fim": "2025-03-31"},
    ]
    assert "99.99" in resultado
    assert resultado == sem_reuso(tenant, inicio="2025-01-01", fim="2025-12-31")
    assert venda.pk


def test_renomear_loja_invalida_todas_as_partes_do_tenant(
    tenant: Tenant, outro_tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    com_vendas(tenant)
    com_vendas(outro_tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-03-31")
    relatorio(outro_tenant, inicio="2025-01-01", fim="2025-03-31")
    outro_tenant.lojas.update(nome="Outro nome")

    with contando(monkeypatch, "vendas") as calculadas:
        relatorio(tenant, inicio="2025-01-01", fim="2025-03-31")
        assert calculadas == []
        resultado = relatorio(outro_tenant, inicio="2025-01-01", fim="2025-03-31")

    assert len(calculadas) == 3
    assert "Outro nome" in resultado


def test_truncate_invalida_tudo(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    com_vendas(tenant)
    relatorio(tenant, "comissoes", inicio="2025-01-01", fim="2025-02-28")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE erp_vendas CASCADE")

    with contando(monkeypatch, "comissoes") as calculadas:
        resultado = relatorio(
            tenant, "comissoes", inicio="2025-01-01", fim="2025-02-28"
        )

    assert len(calculadas) == 2
    assert resultado == sem_reuso(
        tenant, "comissoes", inicio="2025-01-01", fim="2025-02-28"
    )


def test_tipo_de_foto_nunca_e_reusado(tenant: Tenant) -> None:
    helpers.criar_lojas(tenant, "L1")
    relatorio(tenant, "estoque", inicio="2025-01-01", fim="2025-01-31")
    relatorio(tenant, "estoque", inicio="2025-01-01", fim="2025-01-31")

    assert not ParteGuardada.objects.exists()


def test_loja_levada_a_outro_tenant_e_renomeada_la_nao_deixa_parte_velha(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    # A sale of `tenant` whose store now belongs to `outro_tenant`: a rename
    # there bumps only outro_tenant's version of erp_lojas, so the report
    # must not read another tenant's stores at all.
    com_vendas(tenant)
    tenant.lojas.update(tenant=outro_tenant)
    antes = relatorio(tenant, inicio="2025-01-01", fim="2025-03-31")
    outro_tenant.lojas.update(nome="Renomeada")

    depois = relatorio(tenant, inicio="2025-01-01", fim="2025-03-31")

    assert depois == antes == sem_reuso(tenant, inicio="2025-01-01", fim="2025-03-31")


def test_suporte_ve_a_taxa_de_acerto_e_o_tamanho_por_tenant(tenant: Tenant) -> None:
    com_vendas(tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-03-31")
    relatorio(tenant, inicio="2025-01-01", fim="2025-04-30")

    (linha,) = painel.montar("UTC").reuso

    assert (linha.nome, linha.partes, linha.acertos, linha.falhas) == (
        tenant.nome,
        4,
        3,
        4,
    )
    assert linha.bytes == sum(ParteGuardada.objects.values_list("tamanho", flat=True))
    assert linha.taxa_de_acerto == 3 / 7
