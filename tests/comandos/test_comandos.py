from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.test import override_settings

from relatorios.models import Loja, MovimentoEstoque, Tenant, Usuario, Venda, Vendedor
from tests import helpers, processos
from tests.tipos_de_teste import Lento

pytestmark = pytest.mark.django_db


def rodar(*args: str, **kwargs: object) -> str:
    saida = io.StringIO()
    call_command(*args, stdout=saida, **kwargs)
    return saida.getvalue()


def test_criar_tenant_imprime_o_token_na_ultima_linha() -> None:
    saida = rodar(
        "criar_tenant", "Rede Sul", "--usuario", "gerente.sul", "--senha", "s3nha-boa"
    )
    token = saida.strip().splitlines()[-1]
    usuario = Usuario.objects.get(username="gerente.sul")
    assert usuario.tenant.nome == "Rede Sul"
    assert usuario.tenant.fuso_horario == "America/Sao_Paulo"
    assert usuario.check_password("s3nha-boa")
    resposta = helpers.cliente_com_token(token).get("/relatorios/jobs/1")
    assert resposta.status_code == 404  # authenticated: the job simply is not there


def test_criar_tenant_com_usuario_existente_e_erro_claro() -> None:
    rodar("criar_tenant", "Rede Sul", "--usuario", "gerente.sul")
    with pytest.raises(CommandError, match="já existe"):
        rodar("criar_tenant", "Outra", "--usuario", "gerente.sul")
    assert Tenant.objects.count() == 1


def test_criar_tenant_com_fuso_invalido_e_erro_claro() -> None:
    with pytest.raises(CommandError, match="fuso"):
        rodar("criar_tenant", "X", "--usuario", "u", "--fuso", "Marte/Olimpo")
    assert Tenant.objects.count() == 0


def assinatura(tenant: Tenant) -> list[tuple]:
    """The tenant's generated data without its ids (which differ between tenants)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT l.codigo, p.sku, ve.nome, ve.taxa_comissao, v.data_hora,
                   v.quantidade, v.valor
              FROM erp_vendas v
              JOIN erp_lojas l ON l.id = v.loja_id
              JOIN erp_produtos p ON p.id = v.produto_id
              JOIN erp_vendedores ve ON ve.id = v.vendedor_id
             WHERE v.tenant_id = %s
             ORDER BY v.id
            """,
            [tenant.pk],
        )
        return cursor.fetchall()


def test_gerar_dados_e_deterministico_e_substitui_os_dados(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    opcoes = ["--lojas", "3", "--vendas", "2500", "--movimentos", "400", "--seed", "9"]
    rodar("gerar_dados", "--tenant", str(tenant.pk), *opcoes)
    rodar("gerar_dados", "--tenant", str(tenant.pk), *opcoes)
    rodar("gerar_dados", "--tenant", str(outro_tenant.pk), *opcoes)

    assert Venda.objects.filter(tenant=tenant).count() == 2500
    assert Loja.objects.filter(tenant=tenant).count() == 3
    assert Vendedor.objects.filter(tenant=tenant).count() == 12
    # 400 movements plus an opening balance per store and product.
    assert MovimentoEstoque.objects.filter(tenant=tenant).count() == 400 + 3 * 200
    assert assinatura(tenant) == assinatura(outro_tenant)
    lojas_das_vendas = set(
        Venda.objects.filter(tenant=tenant).values_list("loja__tenant_id", flat=True)
    )
    assert lojas_das_vendas == {tenant.pk}


class ComAmostra(Lento):
    """A type that brings sample rows of its own: one stock count per store,
    of a random quantity, on a day no generated movement has."""

    tipo = "teste_com_amostra"

    def dados_de_exemplo(self, cursor: CursorWrapper, tenant_id: int) -> None:
        cursor.execute(
            """
            INSERT INTO erp_movimentos_estoque
                   (tenant_id, loja_id, produto_id, data, quantidade)
            SELECT l.tenant_id, l.id,
                   (SELECT min(p.id) FROM erp_produtos p WHERE p.tenant_id = %s),
                   '1999-12-31', 1 + floor(random() * 1000000)::int
              FROM erp_lojas l WHERE l.tenant_id = %s ORDER BY l.codigo
            """,
            [tenant_id, tenant_id],
        )


def amostras(tenant: Tenant) -> list[int]:
    return list(
        MovimentoEstoque.objects.filter(tenant=tenant, data="1999-12-31")
        .order_by("loja__codigo")
        .values_list("quantidade", flat=True)
    )


def test_cada_tipo_gera_os_seus_dados_de_exemplo_com_a_semente(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    opcoes = ["--lojas", "3", "--vendas", "100", "--movimentos", "10", "--seed", "9"]
    extras = [*processos.TIPOS_DE_TESTE.split(","), f"{__name__}.ComAmostra"]
    with override_settings(RELATORIOS_TIPOS_EXTRAS=extras):
        rodar("gerar_dados", "--tenant", str(tenant.pk), *opcoes)
        rodar("gerar_dados", "--tenant", str(tenant.pk), *opcoes)
        rodar("gerar_dados", "--tenant", str(outro_tenant.pk), *opcoes)
        mesma_semente = amostras(outro_tenant)
        rodar("gerar_dados", "--tenant", str(outro_tenant.pk), *opcoes, "--seed", "10")
        outra_semente = amostras(outro_tenant)
    rodar("gerar_dados", "--tenant", str(outro_tenant.pk), *opcoes)

    assert len(amostras(tenant)) == 3  # replaced, not added to
    assert len(set(amostras(tenant))) == 3
    assert mesma_semente == amostras(tenant)
    assert len(outra_semente) == 3
    assert outra_semente != amostras(tenant)
    assert amostras(outro_tenant) == []  # the type is gone: so are its rows


def test_outra_semente_gera_outros_dados(tenant: Tenant, outro_tenant: Tenant) -> None:
    rodar("gerar_dados", "--tenant", str(tenant.pk), "--vendas", "500", "--seed", "1")
    rodar(
        "gerar_dados",
        "--tenant",
        str(outro_tenant.pk),
        "--vendas",
        "500",
        "--seed",
        "2",
    )
    assert assinatura(tenant) != assinatura(outro_tenant)


def test_gerar_dados_para_tenant_inexistente_e_erro_claro(db: None) -> None:
    with pytest.raises(CommandError, match="não existe"):
        rodar("gerar_dados", "--tenant", "999")
