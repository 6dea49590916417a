"""The worker in real qcluster processes, on the test database."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django_q.models import OrmQ

from relatorios import tipos
from relatorios.jobs import execucao, pedidos, vagas
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from relatorios.tipos.base import Contexto
from tests import helpers
from tests.processos import Processo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

UTC = ZoneInfo("UTC")


def submeter(tenant: Tenant, tipo: str, params: dict[str, Any]) -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk, tipo=tipo, params_brutos=params, usuario_id=None
    ).job.id


def terminado(job_id: int) -> RelatorioJob | None:
    job = helpers.job(job_id)
    return job if job.status in (EstadoDoJob.PRONTO, EstadoDoJob.FALHOU) else None


def com_vendas(tenant: Tenant) -> None:
    loja = helpers.criar_lojas(tenant, "L1")[0]
    vendedor = helpers.criar_vendedor(tenant)
    produto = helpers.criar_produto(tenant)
    for dia in range(1, 60):
        helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime(2026, 1, 1, 15, tzinfo=UTC) + timedelta(days=dia),
            quantidade=dia % 4 + 1,
            valor=f"{dia}.25",
        )


def test_job_roda_no_cluster_e_fica_pronto(
    tenant: Tenant, cluster: Callable[..., Processo]
) -> None:
    com_vendas(tenant)
    params = {"inicio": "2026-01-01", "fim": "2026-02-28", "agrupar": "mes"}
    job_id = submeter(tenant, "vendas", params)
    processo = cluster()

    job = helpers.esperar(lambda: terminado(job_id), descricao="job terminar")

    relatorio = tipos.obter("vendas")
    esperado = execucao.calcular(
        relatorio,
        Contexto(job_id=job_id, tenant_id=tenant.pk, fuso_horario=tenant.fuso_horario),
        relatorio.normalizar(params),
        timeout_s=60,
    )
    assert job.status == EstadoDoJob.PRONTO
    assert job.resultado == esperado
    assert job.tentativas == 1
    assert job.progresso == 100
    assert job.iniciado_em <= job.heartbeat_em <= job.concluido_em
    assert job.expira_em == job.concluido_em + timedelta(
        seconds=settings.RELATORIOS_VALIDADE_S
    )
    log = processo.texto_do_log()
    assert re.search(
        rf"job iniciado evento=iniciado job_id={job_id} tenant_id={tenant.pk}"
        r" tentativa=1 tipo=vendas",
        log,
    )
    assert re.search(
        rf"job terminado desfecho=pronto duracao_ms=[0-9]+ evento=concluido"
        rf" job_id={job_id} ",
        log,
    )


def test_relatorio_com_bug_falha_com_motivo(
    tenant: Tenant, cluster: Callable[..., Processo]
) -> None:
    job_id = submeter(
        tenant, "teste_quebrado", {"inicio": "2026-01-01", "fim": "2026-01-31"}
    )
    cluster()

    job = helpers.esperar(lambda: terminado(job_id), descricao="job terminar")

    assert job.status == EstadoDoJob.FALHOU
    assert job.erro == "ZeroDivisionError: division by zero"
    assert "Traceback" in job.erro_detalhe
    assert "tipos_de_teste.py" in job.erro_detalhe
    assert job.resultado is None


def test_segunda_entrega_da_mesma_mensagem_nao_executa_de_novo(
    tenant: Tenant, cluster: Callable[..., Processo]
) -> None:
    job_id = submeter(
        tenant, "teste_lento", {"inicio": "2026-01-01", "fim": "2026-01-31"}
    )
    vagas.enfileirar(job_id=job_id, tipo="teste_lento")
    assert OrmQ.objects.count() == 2
    cluster(RELATORIOS_WORKERS="2")

    job = helpers.esperar(lambda: terminado(job_id), descricao="job terminar")
    helpers.esperar(lambda: OrmQ.objects.count() == 0, descricao="fila vazia")

    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 1


def test_batimento_e_progresso_avancam_durante_a_execucao(
    tenant: Tenant, cluster: Callable[..., Processo]
) -> None:
    # Three monthly chunks of 1.5 s each; heartbeats every 0.5 s.
    job_id = submeter(
        tenant, "teste_lento", {"inicio": "2026-01-01", "fim": "2026-03-31"}
    )
    cluster(RELATORIOS_TESTE_PAUSA_S="1.5")

    primeiro = helpers.esperar(
        lambda: (j := helpers.job(job_id)).status == EstadoDoJob.EXECUTANDO and j,
        descricao="job começar",
    )
    batimentos = {primeiro.heartbeat_em}
    progressos = {primeiro.progresso}
    while (atual := helpers.job(job_id)).status == EstadoDoJob.EXECUTANDO:
        batimentos.add(atual.heartbeat_em)
        progressos.add(atual.progresso)
    final = helpers.job(job_id)

    assert final.status == EstadoDoJob.PRONTO
    # Several distinct heartbeats inside the first chunk alone prove the
    # heartbeat does not wait for the report's progress.
    assert len(batimentos) >= 4
    assert {33, 66} <= progressos
    assert 100 not in progressos
    assert final.resultado == {
        "partes": [
            {"inicio": "2026-01-01", "fim": "2026-01-31"},
            {"inicio": "2026-02-01", "fim": "2026-02-28"},
            {"inicio": "2026-03-01", "fim": "2026-03-31"},
        ]
    }
