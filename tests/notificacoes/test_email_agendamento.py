"""The emails about a schedule say when it runs: its cron in words on the
tenant's clock, with the next firing at send time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from relatorios.agendamentos import alertas, disparo
from relatorios.models import (
    Agendamento,
    Entrega,
    EstadoDoJob,
    EstadoEntrega,
    Ocorrencia,
    RelatorioJob,
    Tenant,
)
from relatorios.notificacoes import entrega
from tests import fusos, helpers

pytestmark = pytest.mark.django_db

DESTINO = ["contab@rede.com"]


@pytest.fixture
def nova_york() -> Tenant:
    tenant = helpers.criar_tenant("Rede NY", fuso=fusos.NOVA_YORK)
    helpers.criar_lojas(tenant, "L001")
    return tenant


def enviar_todas() -> None:
    for pendente in Entrega.objects.filter(
        estado=EstadoEntrega.PENDENTE, canal="email"
    ):
        entrega.entregar(entrega_id=pendente.pk)


def frase(agendamento: Agendamento, palavras: str) -> str:
    agendamento.refresh_from_db()
    assert agendamento.proximo_disparo is not None
    proximo = fusos.local(agendamento.proximo_disparo, fusos.NOVA_YORK)
    return f"Agendamento: {palavras} ({fusos.NOVA_YORK}); próximo: {proximo}"


def test_email_do_relatorio_entregue_diz_quando_o_agendamento_roda(
    nova_york: Tenant,
) -> None:
    agendamento = helpers.criar_agendamento(nova_york, destinatarios=DESTINO)
    disparo.disparar(agora=agendamento.proximo_disparo)
    job_id = Ocorrencia.objects.get().job_id
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado={"agrupar": "dia", "linhas": [], "totais": {}},
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(days=1),
    )
    alertas.verificar()

    enviar_todas()

    [mensagem] = mail.outbox
    esperado = frase(agendamento, "no dia 1 de cada mês, às 03:00")
    assert esperado in mensagem.body
    html: Any = mensagem.alternatives[0][0]
    assert esperado.removeprefix("Agendamento: ") in str(html)


def test_email_de_alerta_diz_quando_o_agendamento_roda(nova_york: Tenant) -> None:
    semanal = helpers.criar_agendamento(
        nova_york, cron="30 6 * * 1,3,5", destinatarios=DESTINO
    )
    alertas.verificar(agora=semanal.proximo_disparo + timedelta(hours=4))

    enviar_todas()

    [mensagem] = mail.outbox
    assert mensagem.subject.startswith("Alerta: o relatório agendado")
    assert frase(semanal, "às segundas, quartas e sextas, às 06:30") in mensagem.body


def test_resumo_de_alertas_diz_quando_cada_agendamento_roda(
    nova_york: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_ALERTAS_RESUMO_APOS = 1
    mensal = helpers.criar_agendamento(nova_york, destinatarios=DESTINO)
    ultimo_dia = helpers.criar_agendamento(
        nova_york, cron="0 4 L * *", destinatarios=DESTINO
    )
    ultimo = max(mensal.proximo_disparo, ultimo_dia.proximo_disparo)
    alertas.verificar(agora=ultimo + timedelta(hours=4))

    enviar_todas()

    [mensagem] = mail.outbox
    assert mensagem.subject.startswith("Resumo:")
    assert frase(mensal, "no dia 1 de cada mês, às 03:00") in mensagem.body
    assert frase(ultimo_dia, "no último dia de cada mês, às 04:00") in mensagem.body
    assert frase(mensal, "no dia 1 de cada mês, às 03:00").removeprefix(
        "Agendamento: "
    ) in str(mensagem.alternatives[0][0])
