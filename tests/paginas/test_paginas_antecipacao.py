from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from relatorios.models import IndicadorDeAntecipacao, PadraoDesligado, Tenant
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


def _padrao_diario(tenant: Tenant) -> None:
    from datetime import timedelta

    from relatorios.models import RelatorioJob
    from relatorios.tipos import normalizacao

    hoje = timezone.localdate()
    for n in range(1, 8):
        dia = hoje - timedelta(days=n)
        ontem = (dia - timedelta(days=1)).isoformat()
        params = {"inicio": ontem, "fim": ontem, "agrupar": "dia", "lojas": []}
        RelatorioJob.objects.create(
            chave=normalizacao.chave(tenant.pk, "vendas", params),
            tenant=tenant,
            tipo="vendas",
            params=params,
            status="pronto",
            pedido_em=timezone.now() - timedelta(days=n),
        )


def test_gerente_ve_e_desliga_um_padrao(cliente: Client, tenant: Tenant) -> None:
    _padrao_diario(tenant)
    antes = secao(cliente)

    resposta = cliente.post(
        "/painel/antecipacao/padrao/",
        {
            "tipo": "vendas",
            "periodo": "ontem",
            "resto": '{"agrupar": "dia", "lojas": []}',
            "acao": "desligar",
        },
    )
    depois = secao(cliente)

    assert 'data-padrao="vendas-ontem"' in antes
    assert ">antecipado<" in antes
    assert resposta.status_code == 302
    assert ">desligado<" in depois
    assert PadraoDesligado.objects.filter(tenant=tenant).count() == 1


@pytest.mark.parametrize(
    ("mudanca", "campo"),
    [
        ({"acao": "apagar"}, "acao"),
        ({"resto": "{nao e json"}, "resto"),
        ({"resto": "[1]"}, "resto"),
        ({"periodo": "amanha"}, "periodo"),
        ({"tipo": "x"}, "tipo"),
    ],
)
def test_padrao_invalido_e_400_que_nomeia_o_campo(
    cliente: Client, tenant: Tenant, mudanca: dict[str, str], campo: str
) -> None:
    corpo = {
        "tipo": "vendas",
        "periodo": "ontem",
        "resto": "{}",
        "acao": "desligar",
    } | mudanca

    resposta = cliente.post("/painel/antecipacao/padrao/", corpo)

    assert resposta.status_code == 400
    assert f"{campo}:" in resposta.content.decode()
    assert not PadraoDesligado.objects.exists()
