"""Jobs computed ahead in real qcluster processes: a person's job first."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection

from relatorios.jobs import pedidos, vagas
from relatorios.models import EstadoDoJob, RelatorioJob, RelatorioTentativa, Tenant
from tests import helpers
from tests.processos import Processo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]


def submeter(tenant: Tenant, mes: int, *, antecipado: bool = False) -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="teste_lento",
        params_brutos={"inicio": f"2026-{mes:02d}-01", "fim": f"2026-{mes:02d}-28"},
        usuario_id=None,
        antecipado=antecipado,
    ).job.id


def na_frente_da_fila(job_id: int) -> None:
    # The worst case for the rule: the job computed ahead holds the oldest
    # message (as when the capacity was idle when it was dispatched).
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE relatorio_jobs SET enfileirado_em = now() WHERE id = %s",
            [job_id],
        )
    vagas.enfileirar(job_id=job_id, tipo="teste_lento")


def inicio(job_id: int) -> object:
    return RelatorioTentativa.objects.get(job_id=job_id, numero=1).iniciado_em


def todos_prontos(*ids: int) -> bool:
    return RelatorioJob.objects.filter(
        pk__in=ids, status=EstadoDoJob.PRONTO
    ).count() == len(ids)


def test_job_de_uma_pessoa_e_reivindicado_antes_do_antecipado_do_tenant(
    tenant: Tenant, cluster: Callable[..., Processo]
) -> None:
    antecipado = submeter(tenant, 1, antecipado=True)
    na_frente_da_fila(antecipado)
    pessoa = submeter(tenant, 2)

    cluster(RELATORIOS_WORKERS="1", RELATORIOS_VARREDURA_S="0.5")
    helpers.esperar(lambda: todos_prontos(antecipado, pessoa), descricao="prontos")

    assert inicio(pessoa) < inicio(antecipado)
    # Refused while a person's job waited: no attempt was spent on it.
    assert helpers.job(antecipado).tentativas == 1
    assert helpers.job(antecipado).pedido_em is None


def test_antecipado_de_um_tenant_nao_atrasa_o_pedido_de_outro(
    tenant: Tenant, outro_tenant: Tenant, cluster: Callable[..., Processo]
) -> None:
    antecipados = [submeter(tenant, mes, antecipado=True) for mes in (1, 2)]
    for job_id in antecipados:
        na_frente_da_fila(job_id)
    outro = submeter(outro_tenant, 3)

    cluster(RELATORIOS_WORKERS="1", RELATORIOS_VARREDURA_S="0.5")
    helpers.esperar(lambda: todos_prontos(*antecipados, outro), descricao="prontos")

    assert all(inicio(outro) < inicio(job_id) for job_id in antecipados)
