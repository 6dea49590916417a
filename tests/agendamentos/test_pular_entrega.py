"""A schedule that skips a delivery whose report is empty or the same as the
last one sent: over the real delivery path (the checker's pass, the outbox,
Django's SMTP backend against a real SMTP server)."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from relatorios.agendamentos import agenda, alertas, disparo
from relatorios.models import Agendamento, Alerta, Ocorrencia, Tenant
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers
from tests.agendamentos.test_entrega import CONTABILIDADE, pronto
from tests.api.test_xlsx import VENDAS
from tests.conftest import CaixaSmtp

pytestmark = pytest.mark.django_db

VAZIO = {"agrupar": "mes", "linhas": [], "totais": VENDAS["totais"]}


@pytest.fixture
def caixa(smtp: CaixaSmtp, settings: Any) -> CaixaSmtp:
    for nome, valor in smtp.ambiente().items():
        setattr(settings, nome, valor)
    return smtp


def agendamento(tenant: Tenant, pular: str | None) -> Agendamento:
    helpers.criar_lojas(tenant, "L001")
    extras = {} if pular is None else {"pular": pular}
    return helpers.criar_agendamento(
        tenant, nome="Fechamento", destinatarios=CONTABILIDADE, **extras
    )


def entregar(agendamento: Agendamento, resultado: Any) -> Ocorrencia:
    """Fire its next occurrence, make its report `pronto` with `resultado`,
    run the checker's pass past the deadline and send what it wrote."""
    agendamento.refresh_from_db()
    planejado = agendamento.proximo_disparo
    assert planejado is not None
    disparo.disparar(agora=planejado)
    ocorrencia = Ocorrencia.objects.get(
        agendamento=agendamento, planejado_para=planejado
    )
    pronto(ocorrencia.job_id, resultado)
    alertas.verificar(agora=ocorrencia.prazo_em + timedelta(minutes=1))
    helpers.entregar_em_voo()
    ocorrencia.refresh_from_db()
    return ocorrencia


def recebidos(caixa: CaixaSmtp) -> int:
    return len(caixa.para(CONTABILIDADE[0]))


def test_relatorio_vazio_nao_e_enviado_e_conta_como_entregue(
    tenant: Tenant, caixa: CaixaSmtp
) -> None:
    ocorrencia = entregar(agendamento(tenant, "vazio"), VAZIO)

    assert recebidos(caixa) == 0
    assert ocorrencia.entregue_em is not None
    assert ocorrencia.pulada_por == "vazio"
    assert ocorrencia.entregue_como is None
    assert ocorrencia.conferida
    assert not Alerta.objects.filter(ocorrencia=ocorrencia).exists()


def test_relatorio_igual_ao_ultimo_enviado_nao_e_enviado(
    tenant: Tenant, caixa: CaixaSmtp
) -> None:
    modelo = agendamento(tenant, "igual")

    primeira = entregar(modelo, VENDAS)
    segunda = entregar(modelo, copy.deepcopy(VENDAS))

    assert recebidos(caixa) == 1
    assert (primeira.pulada_por, segunda.pulada_por) == (None, "igual")
    assert segunda.entregue_em is not None
    assert not Alerta.objects.filter(ocorrencia__agendamento=modelo).exists()


def test_relatorio_que_mudou_e_enviado(tenant: Tenant, caixa: CaixaSmtp) -> None:
    modelo = agendamento(tenant, "vazio_ou_igual")
    mudou = copy.deepcopy(VENDAS)
    mudou["linhas"][0]["receita"] = "1.00"

    primeira = entregar(modelo, VENDAS)
    segunda = entregar(modelo, copy.deepcopy(VENDAS))
    terceira = entregar(modelo, mudou)
    # Compared with the last one sent (the first), not the skipped one.
    quarta = entregar(modelo, copy.deepcopy(VENDAS))

    assert [o.pulada_por for o in (primeira, segunda, terceira, quarta)] == [
        None,
        "igual",
        None,
        None,
    ]
    assert recebidos(caixa) == 3


def test_sem_pular_tudo_e_enviado_como_antes(tenant: Tenant, caixa: CaixaSmtp) -> None:
    modelo = agendamento(tenant, None)

    primeira = entregar(modelo, VAZIO)
    segunda = entregar(modelo, VAZIO)

    assert modelo.pular == "nunca"
    assert recebidos(caixa) == 2
    assert (primeira.pulada_por, segunda.pulada_por) == (None, None)
    assert primeira.resultado_md5 is None  # nothing hashed when not comparing


@pytest.mark.parametrize("valor", ["sempre", 1, ["vazio"], ""])
def test_pular_invalido_e_recusado_nomeando_o_campo(tenant: Tenant, valor: Any) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        agendamento(tenant, valor)

    assert erro.value.campo == "pular"


def test_pular_pode_ser_alterado(tenant: Tenant) -> None:
    modelo = agendamento(tenant, None)

    alterado = agenda.alterar_entrega(
        agendamento_id=modelo.pk, tenant_id=tenant.pk, pular="vazio"
    )

    assert alterado is not None
    assert Agendamento.objects.get(pk=modelo.pk).pular == "vazio"
