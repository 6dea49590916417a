"""One clock: support reads a tenant's times on that tenant's wall clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from relatorios.agendamentos import alertas
from relatorios.jobs import pedidos
from relatorios.models import Alerta, Entrega, RelatorioJob, Tenant, Usuario, relogio
from tests import helpers

pytestmark = pytest.mark.django_db

# 18:05 UTC is 15:05 in Brasília and 18:05 in Lisbon (winter).
INSTANTE = datetime(2026, 12, 7, 18, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fuso", "esperado"),
    [
        ("America/Sao_Paulo", "07/12/2026 15:05 (horário de Brasília)"),
        ("Europe/Lisbon", "07/12/2026 18:05 (Europe/Lisbon)"),
        ("America/Manaus", "07/12/2026 14:05 (America/Manaus)"),
        ("UTC", "07/12/2026 18:05 (UTC)"),
    ],
)
def test_horario_no_fuso_e_com_o_nome_do_fuso(fuso: str, esperado: str) -> None:
    assert relogio.horario(INSTANTE, fuso) == esperado


def test_sem_instante_e_um_traco() -> None:
    assert relogio.horario(None, "UTC") == "—"


@pytest.fixture
def super_cliente(db: None) -> Client:
    cliente = Client()
    cliente.force_login(Usuario.objects.create_superuser("raiz", "", "senha-123456"))
    return cliente


def _alerta(tenant: Tenant) -> Alerta:
    agendamento = helpers.criar_agendamento(tenant)
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=4))
    alerta = Alerta.objects.get(ocorrencia__agendamento=agendamento)
    Alerta.objects.filter(pk=alerta.pk).update(aberto_em=INSTANTE)
    return alerta


def test_alerta_aberto_em_no_fuso_de_cada_tenant(super_cliente: Client) -> None:
    _alerta(helpers.criar_tenant("Rede SP"))
    _alerta(helpers.criar_tenant("Rede Lisboa", fuso="Europe/Lisbon"))
    html = super_cliente.get("/admin/relatorios/alerta/").content.decode()
    assert '07/12/2026 15:05</time> <small class="fuso">(horário de Brasília)' in html
    assert '07/12/2026 18:05</time> <small class="fuso">(Europe/Lisbon)' in html


def test_entregas_e_webhooks_no_fuso_do_tenant(super_cliente: Client) -> None:
    tenant = helpers.criar_tenant("Rede SP")
    Entrega.objects.create(
        mensagem_id="m-1",
        tenant=tenant,
        canal="email",
        evento="job.pronto",
        destinatarios=["a@rede.com"],
        payload={},
        proxima_em=INSTANTE,
    )
    Entrega.objects.filter(mensagem_id="m-1").update(criado_em=INSTANTE)
    html = super_cliente.get("/admin/relatorios/entrega/").content.decode()
    assert html.count("07/12/2026 15:05</time>") == 2
    assert "horário de Brasília" in html


def test_linha_do_tempo_do_job_no_fuso_do_tenant(
    super_cliente: Client, tenant: Tenant
) -> None:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-01"},
        usuario_id=None,
    ).job.id
    RelatorioJob.objects.filter(pk=job_id).update(criado_em=INSTANTE)
    html = super_cliente.get(
        f"/admin/relatorios/relatoriojob/{job_id}/change/"
    ).content.decode()
    assert "quando (horário de Brasília)" in html
    assert "07/12/2026 15:05:00" in html


def test_painel_diz_o_fuso_que_usa(super_cliente: Client) -> None:
    helpers.criar_tenant("Rede A")
    helpers.criar_tenant("Rede B")
    helpers.criar_tenant("Rede C", fuso="Europe/Lisbon")
    html = super_cliente.get("/admin/painel/").content.decode()
    assert "Horários no horário de Brasília (o fuso da maioria dos tenants)" in html


def test_painel_de_tenants_de_lisboa_usa_lisboa(super_cliente: Client) -> None:
    helpers.criar_tenant("Rede L", fuso="Europe/Lisbon")
    html = super_cliente.get("/admin/painel/").content.decode()
    assert "Horários no fuso Europe/Lisbon" in html
