"""The chunk store in real qclusters: a second job reuses the first one's
chunks, and a worker killed mid-report leaves nothing a later job trusts."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings

from relatorios import tipos
from relatorios.jobs import execucao
from relatorios.models import EstadoDoJob, ParteGuardada, Tenant
from relatorios.tipos.base import Contexto
from tests import helpers
from tests.jobs.test_falhas import (
    RAPIDO,
    com_vendas,
    esperar_fim,
    pid_da_primeira_parte,
    submeter,
)
from tests.processos import Processo
from tests.reuso.comum import venda_atrasada

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

TIPO = "teste_contado_reusavel"
UTC = ZoneInfo("UTC")


@pytest.fixture(autouse=True)
def rapido(ajustes: Callable[..., None]) -> None:
    ajustes(**RAPIDO)


def recomputado(tenant: Tenant, job_id: int) -> dict[str, Any]:
    """The job's result computed afresh here, every chunk, no store."""
    job = helpers.job(job_id)
    ctx = Contexto(job_id=0, tenant_id=tenant.pk, fuso_horario=tenant.fuso_horario)
    with override_settings(RELATORIOS_REUSO_PARTES=False):
        return execucao.calcular(tipos.obter(TIPO), ctx, job.params, timeout_s=60)


def test_segundo_job_reusa_as_partes_do_primeiro(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any
) -> None:
    com_vendas(tenant)
    cluster()
    primeiro = submeter(tenant, TIPO, meses=3)
    assert esperar_fim(primeiro).status == EstadoDoJob.PRONTO

    segundo = submeter(tenant, TIPO, meses=4)
    job = esperar_fim(segundo)

    assert [parte for parte, _, _ in execucoes(primeiro)] == [
        "2026-01-01",
        "2026-02-01",
        "2026-03-01",
    ]
    # Only April was computed; January to March came from the store.
    assert [parte for parte, _, _ in execucoes(segundo)] == ["2026-04-01"]
    assert job.status == EstadoDoJob.PRONTO
    assert job.resultado == recomputado(tenant, segundo)


def test_worker_morto_no_meio_nao_deixa_parte_que_um_job_depois_confie(
    tenant: Tenant,
    cluster: Callable[..., Processo],
    execucoes: Any,
    ajustes: Callable[..., None],
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=1)
    com_vendas(tenant)
    cluster()
    primeiro = submeter(tenant, TIPO, meses=3)
    pid = pid_da_primeira_parte(execucoes, primeiro)
    # Killed once January is stored, in the middle of a later chunk.
    helpers.esperar(
        lambda: ParteGuardada.objects.filter(tenant=tenant).exists(),
        descricao="janeiro guardado",
    )

    os.kill(pid, signal.SIGKILL)
    # A late sale into January while the job is orphaned: the January the
    # killed worker stored must not be trusted now.
    venda_atrasada(tenant, datetime(2026, 1, 20, 12, tzinfo=UTC), "1234.56")
    job = esperar_fim(primeiro)
    segundo = submeter(tenant, TIPO, meses=4)
    depois = esperar_fim(segundo)

    assert job.status == depois.status == EstadoDoJob.PRONTO
    assert job.tentativas == 2
    assert depois.resultado == recomputado(tenant, segundo)
    # January: its 11 sales and the late one.
    assert depois.resultado["vendas"][0][0] == 12
    assert "2026-01-01" in [parte for parte, _, _ in execucoes(segundo)]
