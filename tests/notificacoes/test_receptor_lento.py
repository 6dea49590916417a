"""A receiver that answers a byte at a time, and a sender that never comes
back: each attempt ends within its deadline or is recorded as failed, the
delivery ends `falhou` after the maximum, and its tenant's slot is freed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from relatorios.jobs import ciclo, pedidos
from relatorios.models import Entrega, EstadoEntrega, Tenant
from relatorios.notificacoes import entrega, vagas, webhooks
from tests import helpers
from tests.processos import Processo
from tests.receptor_lento import ReceptorLento

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes"}


@pytest.fixture
def lento() -> Iterator[ReceptorLento]:
    receptor = ReceptorLento(intervalo_s=1.5)
    yield receptor
    receptor.fechar()


@pytest.fixture
def rapido() -> Iterator[ReceptorLento]:
    receptor = ReceptorLento(intervalo_s=0)
    yield receptor
    receptor.fechar()


def webhook(tenant: Tenant, url: str) -> int:
    return webhooks.registrar_webhook(
        tenant_id=tenant.pk, url=url, eventos=["job.pronto"], usuario_id=None
    ).pk


def submeter(tenant: Tenant) -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id


def da_entrega(webhook_id: int) -> Entrega:
    return Entrega.objects.get(webhook_id=webhook_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.processos
def test_receptor_que_responde_um_byte_por_vez_termina_falhou_e_libera_a_vaga(
    tenant: Tenant,
    ajustes: Callable[..., None],
    lento: ReceptorLento,
    rapido: ReceptorLento,
    cluster: Callable[..., Processo],
) -> None:
    ajustes(
        RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True,
        # Each byte (1.5 s apart) is in time for the 2 s per-operation timeout.
        RELATORIOS_WEBHOOK_TIMEOUT_S=2,
        RELATORIOS_ENTREGA_MAX_TENTATIVAS=2,
        RELATORIOS_ENTREGA_BACKOFF_S=0.2,
        RELATORIOS_ENTREGA_BACKOFF_MAX_S=0.5,
        RELATORIOS_VARREDURA_S=0.5,
    )
    gancho_lento = webhook(tenant, lento.url)
    gancho_rapido = webhook(tenant, rapido.url)
    submeter(tenant)
    cluster()

    falhou = helpers.esperar(
        lambda: Entrega.objects.filter(
            webhook_id=gancho_lento, estado=EstadoEntrega.FALHOU
        ).first(),
        descricao="a entrega ao receptor lento terminar falhou",
    )
    entregue = helpers.esperar(
        lambda: Entrega.objects.filter(
            webhook_id=gancho_rapido, estado=EstadoEntrega.ENTREGUE
        ).first(),
        descricao="a outra entrega do tenant, na vaga liberada",
    )

    assert falhou.tentativas == 2
    assert lento.pedidos == 2
    assert "resposta incompleta em 4 s" in falhou.ultimo_erro
    assert falhou.em_curso_ate is None
    assert entregue.tentativas == 1


def duas_entregas(tenant: Tenant, url: str) -> tuple[Entrega, Entrega]:
    """Two deliveries of one job's end: the tenant's one slot holds the
    first (dispatched), the second waits without a message."""
    primeiro, segundo = webhook(tenant, url), webhook(tenant, url + "?2")
    job_id = submeter(tenant)
    reivindicado = ciclo.reivindicar(job_id=job_id)
    assert reivindicado is not None
    assert ciclo.concluir(
        tentativa=reivindicado.tentativa, resultado={"linhas": []}, validade_s=600
    )
    em_voo, esperando = sorted(
        [da_entrega(primeiro), da_entrega(segundo)],
        key=lambda e: e.enfileirada_em is None,
    )
    assert esperando.enfileirada_em is None
    return em_voo, esperando


def abandonar(entrega_id: int, *, tentativas: int) -> None:
    """What a sender killed by the hard stop leaves: the attempt counted, its
    lease run out, nothing recorded."""
    Entrega.objects.filter(pk=entrega_id).update(
        tentativas=tentativas, em_curso_ate=timezone.now() - timedelta(seconds=1)
    )


@pytest.mark.django_db(transaction=True)
def test_a_varredura_encerra_como_falhou_a_entrega_abandonada_na_ultima_tentativa(
    tenant: Tenant, ajustes: Callable[..., None], rapido: ReceptorLento
) -> None:
    ajustes(RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True, RELATORIOS_ENTREGA_MAX_TENTATIVAS=3)
    abandonada, esperando = duas_entregas(tenant, rapido.url)
    abandonar(abandonada.pk, tentativas=3)

    varredura = entrega.varrer()

    depois = Entrega.objects.get(pk=abandonada.pk)
    assert varredura.abandonadas == 1
    assert (depois.estado, depois.tentativas) == (EstadoEntrega.FALHOU, 3)
    assert depois.ultimo_erro == entrega.ABANDONADA.format(vagas.prazo_de_envio_s())
    assert depois.em_curso_ate is None
    # Its slot went to the tenant's next delivery.
    assert Entrega.objects.get(pk=esperando.pk).enfileirada_em is not None


@pytest.mark.django_db(transaction=True)
def test_a_reivindicacao_nao_envia_de_novo_a_entrega_abandonada_na_ultima_tentativa(
    tenant: Tenant, ajustes: Callable[..., None], rapido: ReceptorLento
) -> None:
    ajustes(RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True, RELATORIOS_ENTREGA_MAX_TENTATIVAS=3)
    abandonada, esperando = duas_entregas(tenant, rapido.url)
    abandonar(abandonada.pk, tentativas=3)

    estado = entrega.entregar(entrega_id=abandonada.pk)

    depois = Entrega.objects.get(pk=abandonada.pk)
    assert estado is None
    assert rapido.pedidos == 0
    assert (depois.estado, depois.tentativas) == (EstadoEntrega.FALHOU, 3)
    assert Entrega.objects.get(pk=esperando.pk).enfileirada_em is not None


@pytest.mark.django_db(transaction=True)
def test_tentativa_abandonada_antes_da_ultima_conta_como_falha_e_espera(
    tenant: Tenant, ajustes: Callable[..., None], rapido: ReceptorLento
) -> None:
    ajustes(
        RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True,
        RELATORIOS_ENTREGA_MAX_TENTATIVAS=3,
        RELATORIOS_ENTREGA_BACKOFF_S=30,
    )
    abandonada, esperando = duas_entregas(tenant, rapido.url)
    abandonar(abandonada.pk, tentativas=1)

    entrega.varrer()

    depois = Entrega.objects.get(pk=abandonada.pk)
    assert (depois.estado, depois.tentativas) == (EstadoEntrega.PENDENTE, 1)
    assert depois.proxima_em > timezone.now() + timedelta(seconds=20)
    assert (depois.enfileirada_em, depois.em_curso_ate) == (None, None)
    assert depois.ultimo_erro.startswith("tentativa interrompida")
    assert Entrega.objects.get(pk=esperando.pk).enfileirada_em is not None
