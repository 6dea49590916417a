from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from relatorios.models import IndicadorDeAntecipacao, Tenant
from tests import helpers

pytestmark = pytest.mark.django_db


@pytest.fixture
def cliente(tenant: Tenant) -> Client:
    cliente = Client()
    cliente.force_login(helpers.criar_usuario(tenant)[0])
    return cliente


def secao(cliente: Client) -> str:
    html = cliente.get("/painel/").content.decode()
    return html.split('data-campo="antecipacao"', 1)[1].split("</section>", 1)[0]


def test_gerente_ve_precisao_e_recall_da_sua_empresa(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    agora = timezone.now()
    IndicadorDeAntecipacao.objects.create(
        tenant=tenant,
        assentados=4,
        aproveitados=3,
        pedidos=10,
        imediatos=7,
        calculado_em=agora,
    )
    IndicadorDeAntecipacao.objects.create(
        tenant=outro_tenant,
        assentados=2,
        aproveitados=1,
        pedidos=3,
        imediatos=3,
        calculado_em=agora,
    )

    html = secao(cliente)

    assert "Ligado." in html
    assert 'data-campo="precisao">75%' in html
    assert 'data-campo="recall">70%' in html
    assert "100%" not in html


def test_gerente_desliga_e_liga_a_antecipacao_so_da_sua_empresa(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    desligar = cliente.post("/painel/antecipacao/", {"antecipar": "nao"})
    desligado = Tenant.objects.get(pk=tenant.pk).antecipar
    html = secao(cliente)
    ligar = cliente.post("/painel/antecipacao/", {"antecipar": "sim"})

    assert desligar.status_code == ligar.status_code == 302
    assert desligado is False
    assert "Desligado." in html
    assert Tenant.objects.get(pk=tenant.pk).antecipar is True
    assert Tenant.objects.get(pk=outro_tenant.pk).antecipar is True


@pytest.mark.parametrize("corpo", [{}, {"antecipar": "talvez"}, {"antecipar": ""}])
def test_valor_invalido_e_400_que_nomeia_o_campo(
    cliente: Client, tenant: Tenant, corpo: dict[str, str]
) -> None:
    resposta = cliente.post("/painel/antecipacao/", corpo)

    assert resposta.status_code == 400
    assert "antecipar:" in resposta.content.decode()
    assert Tenant.objects.get(pk=tenant.pk).antecipar is True
