"""Deliveries never take every worker: two tenants' slow receivers hold at
most RELATORIOS_MAX_ENTREGAS_EM_VOO deliveries (one below the workers), so a
third tenant's report is claimed while they hold (issue 37)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from relatorios.jobs import ciclo, pedidos
from relatorios.models import Entrega, EstadoDoJob, EstadoEntrega, RelatorioJob, Tenant
from relatorios.notificacoes import entrega, webhooks
from tests import helpers, processos
from tests.processos import Processo
from tests.receptor_lento import ReceptorLento

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes"}


@pytest.fixture
def lento() -> Iterator[ReceptorLento]:
    receptor = ReceptorLento(intervalo_s=1.5)
    yield receptor
    receptor.fechar()


def submeter(tenant: Tenant) -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id


def job_pronto_com_webhook(tenant: Tenant, *urls: str) -> None:
    """A job of `tenant` ends `pronto`: a delivery per webhook is written."""
    for url in urls:
        webhooks.registrar_webhook(
            tenant_id=tenant.pk, url=url, eventos=["job.pronto"], usuario_id=None
        )
    reivindicado = ciclo.reivindicar(job_id=submeter(tenant))
    assert reivindicado is not None
    assert ciclo.concluir(
        tentativa=reivindicado.tentativa, resultado={"linhas": []}, validade_s=600
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.processos
def test_entregas_lentas_de_dois_tenants_nao_tomam_todos_os_workers(
    tenant: Tenant,
    outro_tenant: Tenant,
    ajustes: Callable[..., None],
    lento: ReceptorLento,
    cluster: Callable[..., Processo],
) -> None:
    ajustes(
        RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True,
        RELATORIOS_WORKERS=2,
        # Each byte (1.5 s apart) is in time for the per-operation timeout;
        # each POST holds its worker until its 16 s deadline.
        RELATORIOS_WEBHOOK_TIMEOUT_S=8,
        RELATORIOS_ENTREGA_MAX_TENTATIVAS=1,
        RELATORIOS_VARREDURA_S=0.5,
    )
    terceiro = helpers.criar_tenant("Rede C")
    job_pronto_com_webhook(outro_tenant, lento.url)
    job_pronto_com_webhook(terceiro, lento.url)
    lentas = Entrega.objects.filter(tenant__in=[outro_tenant, terceiro])
    assert lentas.count() == 2
    cluster()
    helpers.esperar(
        lambda: lento.pedidos >= 1, descricao="um receptor lento segurar uma entrega"
    )

    job_id = submeter(tenant)
    helpers.esperar(
        lambda: RelatorioJob.objects.filter(
            pk=job_id, status=EstadoDoJob.PRONTO
        ).exists(),
        descricao="o relatório do terceiro tenant ficar pronto",
    )

    # Ready while the slow deliveries hold: neither attempt has ended yet,
    # and only one was ever handed to a worker.
    assert lentas.filter(estado=EstadoEntrega.PENDENTE, ultimo_erro="").count() == 2
    assert lentas.filter(em_curso_ate__isnull=False).count() == 1
    assert lento.pedidos == 1
    # The one that waited its turn is not lost: it is sent when the first ends.
    for lenta in lentas:
        final = helpers.esperar(
            lambda e=lenta: Entrega.objects.filter(
                pk=e.pk, estado=EstadoEntrega.FALHOU
            ).first(),
            descricao="cada entrega lenta terminar falhou",
        )
        assert final.tentativas == 1
    assert lento.pedidos == 2


@pytest.fixture
def rapido() -> Iterator[ReceptorLento]:
    receptor = ReceptorLento(intervalo_s=0)
    yield receptor
    receptor.fechar()


@pytest.mark.django_db(transaction=True)
def test_a_vaga_liberada_vai_primeiro_a_entrega_de_outro_tenant(
    tenant: Tenant,
    outro_tenant: Tenant,
    ajustes: Callable[..., None],
    rapido: ReceptorLento,
) -> None:
    ajustes(
        RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True,
        RELATORIOS_MAX_ENTREGAS_EM_VOO=1,
        RELATORIOS_MAX_ENTREGAS_POR_TENANT=2,
    )
    job_pronto_com_webhook(tenant, rapido.url, rapido.url + "?2")
    job_pronto_com_webhook(outro_tenant, rapido.url + "?3")
    do_primeiro = Entrega.objects.filter(tenant=tenant).order_by("id")
    do_outro = Entrega.objects.get(tenant=outro_tenant)

    def em_voo() -> list[Entrega]:
        return list(
            Entrega.objects.filter(
                estado=EstadoEntrega.PENDENTE, enfileirada_em__isnull=False
            )
        )

    # One in flight overall, though the tenant has a second slot.
    assert em_voo() == [do_primeiro[0]]

    assert entrega.entregar(entrega_id=do_primeiro[0].pk) == EstadoEntrega.ENTREGUE

    # The freed slot went to the other tenant's delivery, not the tenant's.
    assert em_voo() == [do_outro]
    assert entrega.entregar(entrega_id=do_outro.pk) == EstadoEntrega.ENTREGUE
    assert em_voo() == [do_primeiro[1]]


@pytest.mark.parametrize(
    "ambiente",
    [
        {"RELATORIOS_WORKERS": "2", "RELATORIOS_MAX_ENTREGAS_EM_VOO": "2"},
        {"RELATORIOS_WORKERS": "4", "RELATORIOS_MAX_ENTREGAS_EM_VOO": "0"},
        # The default follows the workers: 3 is one too many for 3 workers.
        {"RELATORIOS_WORKERS": "3", "RELATORIOS_MAX_ENTREGAS_EM_VOO": "3"},
    ],
)
def test_limite_de_entregas_em_voo_que_toma_todos_os_workers_nao_sobe(
    ambiente: dict[str, str],
) -> None:
    resultado = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=processos.RAIZ,
        env={**os.environ, **ambiente},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert resultado.returncode != 0
    assert "RELATORIOS_MAX_ENTREGAS_EM_VOO=" in resultado.stderr
    assert "below RELATORIOS_WORKERS" in resultado.stderr


def test_o_limite_padrao_deixa_um_worker_aos_relatorios() -> None:
    resultado = subprocess.run(
        [
            sys.executable,
            "-c",
            "import config.settings as s; print(s.RELATORIOS_MAX_ENTREGAS_EM_VOO)",
        ],
        cwd=processos.RAIZ,
        env={**os.environ, "RELATORIOS_WORKERS": "5"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert resultado.stdout.strip() == "4", resultado.stderr
