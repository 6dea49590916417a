"""The data versions' triggers: on every ERP table, as the Python side says,
bumped in the writer's transaction."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection, transaction

from relatorios.models import Tenant, VersaoErp
from relatorios.models.partes import PERIODO_DA_LINHA, TABELAS_VERSIONADAS
from tests import helpers

pytestmark = pytest.mark.django_db(transaction=True)


def test_toda_tabela_do_erp_tem_os_gatilhos_com_o_periodo_do_python() -> None:
    tabelas = {
        m._meta.db_table
        for m in apps.get_app_config("relatorios").get_models()
        if m._meta.db_table.startswith("erp_")
    }
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, t.tgname,
                   encode(t.tgargs, 'escape')
              FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
             WHERE t.tgname LIKE '%%_versao_%%'
            """
        )
        gatilhos = cursor.fetchall()

    assert tabelas == set(TABELAS_VERSIONADAS)
    assert {(tabela, nome) for tabela, nome, _ in gatilhos} == {
        (tabela, f"{tabela}_versao_{evento}")
        for tabela in tabelas
        for evento in ("insert", "update", "delete", "truncate")
    }
    # tgargs: each argument followed by a NUL byte (escaped as \000).
    assert {tabela: args.removesuffix("\\000") for tabela, _, args in gatilhos} == {
        tabela: PERIODO_DA_LINHA.get(tabela, "") for tabela in tabelas
    }


def test_escrita_desfeita_nao_muda_versao(tenant: Tenant) -> None:
    helpers.criar_lojas(tenant, "L1")
    antes = list(VersaoErp.objects.values_list("tabela", "versao"))

    def renomear_e_desistir() -> None:
        with transaction.atomic():
            tenant.lojas.update(nome="outro")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        renomear_e_desistir()

    assert list(VersaoErp.objects.values_list("tabela", "versao")) == antes


def test_mover_entre_tenants_muda_as_versoes_dos_dois(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    helpers.criar_lojas(tenant, "L1")

    tenant.lojas.update(tenant=outro_tenant)

    versoes = dict(
        VersaoErp.objects.filter(
            tabela="erp_lojas", tenant_id__in=[tenant.pk, outro_tenant.pk]
        ).values_list("tenant_id", "versao")
    )
    assert versoes == {tenant.pk: 2, outro_tenant.pk: 1}
