from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from relatorios.agendamentos import alertas
from relatorios.models import Agendamento, Tenant
from relatorios.models.cron import em_palavras
from tests import fusos, helpers

pytestmark = pytest.mark.django_db

AGENDAMENTO = {
    "nome": "Fechamento mensal",
    "tipo": "vendas",
    "periodo": "mes_anterior",
    "cron": "0 3 1 * *",
    "prazo_minutos": 180,
    "agrupar": "mes",
    "destinatarios": ["contabilidade@rede.com"],
}


def post(cliente: Client, caminho: str, corpo: Any = None) -> Any:
    return cliente.post(
        caminho,
        data=json.dumps(corpo) if corpo is not None else "",
        content_type="application/json",
    )


@pytest.fixture
def cliente(token: str) -> Client:
    return helpers.cliente_com_token(token)


def test_cria_e_lista_agendamentos_do_tenant(cliente: Client) -> None:
    resposta = post(cliente, "/relatorios/agendamentos", AGENDAMENTO)
    corpo = resposta.json()
    assert resposta.status_code == 201
    assert resposta["Location"] == f"/relatorios/agendamentos/{corpo['id']}"
    assert corpo["prazo_minutos"] == 180
    assert corpo["ativo"] is True
    assert len(corpo["proximos_disparos"]) == 3
    assert corpo["proximos_disparos"][0] == corpo["proximo_disparo"]
    assert corpo["ocorrencias"] == []
    lista = cliente.get("/relatorios/agendamentos").json()["agendamentos"]
    assert [a["id"] for a in lista] == [corpo["id"]]


@pytest.mark.parametrize(
    ("mudanca", "campo"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"periodo": "semana_que_vem"}, "periodo"),
        ({"prazo_minutos": 0}, "prazo_minutos"),
        ({"prazo_minutos": "180"}, "prazo_minutos"),
        ({"prazo_minutos": None}, "prazo_minutos"),
        ({"tipo": ["vendas"]}, "tipo"),
        ({"tipo": "inexistente"}, "tipo"),
        ({"lojas": "L001"}, "lojas"),
        ({"destinatarios": "a@b.com"}, "destinatarios"),
        ({"horario": "03:00"}, "horario"),
        ({"cron": "0 3 * * " + ",".join(["1"] * 100)}, "cron"),
        ({"cron": "*/5 * * * *"}, "cron"),
        ({"nome": "Fechamento\nmensal"}, "nome"),
        ({"destinatarios": ["a" * 246 + "@rede.com"]}, "destinatarios"),
        ({"destinatarios": [f"p{n}@rede.com" for n in range(21)]}, "destinatarios"),
        ({"fuso": "UTC", "ativo": False}, "ativo"),
        ({"pular": "sempre"}, "pular"),
        ({"pular": ["vazio"]}, "pular"),
    ],
)
def test_agendamento_invalido_e_400_que_nomeia_o_campo(
    cliente: Client, mudanca: dict[str, Any], campo: str
) -> None:
    corpo = {k: v for k, v in (AGENDAMENTO | mudanca).items() if v is not None}
    resposta = post(cliente, "/relatorios/agendamentos", corpo)
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == campo
    assert resposta.json()["erro"]
    assert not Agendamento.objects.exists()


@pytest.mark.parametrize(
    "destinatario",
    [
        '"x\fBcc:a@evil.example"@a.example',
        '"ab"@rede.com',
        "a@[10.0.0.5]",
        "postmaster@localhost",
        "=?utf-8?q?ceo=40rede.com?=@evil.example",
    ],
    ids=["aspas-com-controle", "aspas", "ip-literal", "sem-ponto", "rfc2047"],
)
def test_destinatario_que_nao_e_uma_caixa_de_correio_e_400(
    cliente: Client, destinatario: str
) -> None:
    # Each of these passed Django's validate_email and was stored.
    corpo = AGENDAMENTO | {"destinatarios": ["contab@rede.com", destinatario]}
    resposta = post(cliente, "/relatorios/agendamentos", corpo)
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "destinatarios"
    assert not Agendamento.objects.exists()


def test_dominios_permitidos_do_tenant_valem_para_os_destinatarios(
    cliente: Client, tenant: Tenant
) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(dominios_email=["rede.com"])
    fora = post(
        cliente,
        "/relatorios/agendamentos",
        AGENDAMENTO | {"destinatarios": ["contab@rede.com", "eu@gmail.com"]},
    )
    dentro = post(
        cliente,
        "/relatorios/agendamentos",
        AGENDAMENTO | {"destinatarios": ["contab@rede.com", "dono@sp.rede.com"]},
    )
    assert fora.status_code == 400
    assert fora.json() == {
        "erro": "domínio fora dos permitidos para esta empresa: rede.com: eu@gmail.com",
        "campo": "destinatarios",
    }
    assert dentro.status_code == 201
    assert Agendamento.objects.get().destinatarios == [
        "contab@rede.com",
        "dono@sp.rede.com",
    ]


def test_cron_de_240_kb_e_400_que_nomeia_o_campo(cliente: Client) -> None:
    cron = "0 3 * * " + ",".join(["1"] * 120_000)
    resposta = post(cliente, "/relatorios/agendamentos", AGENDAMENTO | {"cron": cron})
    assert resposta.status_code == 400
    assert resposta.json() == {
        "erro": "expressão cron longa demais: o máximo é 200 caracteres",
        "campo": "cron",
    }
    assert not Agendamento.objects.exists()


def test_agendamento_alem_do_limite_do_tenant_e_409(
    cliente: Client, settings: Any
) -> None:
    settings.RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT = 1
    primeiro = post(cliente, "/relatorios/agendamentos", AGENDAMENTO)
    segundo = post(cliente, "/relatorios/agendamentos", AGENDAMENTO)
    assert (primeiro.status_code, segundo.status_code) == (201, 409)
    assert segundo.json() == {
        "erro": "o limite de 1 agendamentos por empresa foi atingido: exclua um "
        "antes de criar outro"
    }
    assert Agendamento.objects.count() == 1


def test_corpo_que_nao_e_objeto_e_400(cliente: Client) -> None:
    resposta = post(cliente, "/relatorios/agendamentos", ["vendas"])
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "corpo"


def test_pausar_retomar_e_excluir(cliente: Client) -> None:
    criado = post(cliente, "/relatorios/agendamentos", AGENDAMENTO).json()
    caminho = f"/relatorios/agendamentos/{criado['id']}"
    pausado = post(cliente, f"{caminho}/pausar").json()
    assert (pausado["ativo"], pausado["proximo_disparo"]) == (False, None)
    assert pausado["proximos_disparos"] == []
    retomado = post(cliente, f"{caminho}/retomar/").json()
    assert retomado["ativo"] is True
    assert retomado["proximo_disparo"] is not None
    assert cliente.delete(caminho).status_code == 204
    assert cliente.get(caminho).status_code == 404
    assert cliente.get("/relatorios/agendamentos").json()["agendamentos"] == []
    # Kept for its history, never fires again.
    assert Agendamento.objects.get().excluido_em is not None


def test_agendamento_de_outro_tenant_e_404(
    cliente: Client, outro_tenant: Tenant
) -> None:
    _, token_b = helpers.criar_usuario(outro_tenant)
    alheio = post(
        helpers.cliente_com_token(token_b), "/relatorios/agendamentos", AGENDAMENTO
    ).json()
    caminho = f"/relatorios/agendamentos/{alheio['id']}"
    assert cliente.get(caminho).status_code == 404
    assert post(cliente, f"{caminho}/pausar").status_code == 404
    assert cliente.delete(caminho).status_code == 404
    assert cliente.get("/relatorios/agendamentos").json()["agendamentos"] == []
    assert Agendamento.objects.get().ativo


def patch(cliente: Client, caminho: str, corpo: Any) -> Any:
    return cliente.patch(
        caminho, data=json.dumps(corpo), content_type="application/json"
    )


def test_pular_na_criacao_e_no_patch(cliente: Client) -> None:
    criado = post(
        cliente, "/relatorios/agendamentos", AGENDAMENTO | {"pular": "vazio"}
    ).json()
    caminho = f"/relatorios/agendamentos/{criado['id']}"

    alterado = patch(cliente, caminho, {"pular": "vazio_ou_igual"})
    padrao = post(cliente, "/relatorios/agendamentos", AGENDAMENTO).json()

    assert criado["pular"] == "vazio"
    assert alterado.status_code == 200
    assert alterado.json()["pular"] == "vazio_ou_igual"
    assert padrao["pular"] == "nunca"


def test_patch_muda_quem_recebe_e_como_e_so_isso(cliente: Client) -> None:
    criado = post(cliente, "/relatorios/agendamentos", AGENDAMENTO).json()
    caminho = f"/relatorios/agendamentos/{criado['id']}"

    so_destinatarios = patch(
        cliente, caminho, {"destinatarios": ["Ana@Rede.com", "bia@rede.com"]}
    )
    so_entrega = patch(cliente, caminho, {"entrega": "link"})

    assert so_destinatarios.status_code == 200
    assert so_destinatarios.json()["destinatarios"] == ["ana@rede.com", "bia@rede.com"]
    assert so_destinatarios.json()["entrega"] == "anexo"
    assert so_entrega.json()["destinatarios"] == ["ana@rede.com", "bia@rede.com"]
    assert so_entrega.json()["entrega"] == "link"
    assert so_entrega.json()["cron"] == AGENDAMENTO["cron"]


@pytest.mark.parametrize(
    ("corpo", "campo"),
    [
        ({"cron": "* * * * *"}, "cron"),
        ({"destinatarios": ["não é e-mail"]}, "destinatarios"),
        ({"destinatarios": None}, "destinatarios"),
        ({"entrega": "pombo"}, "entrega"),
        ({"pular": "talvez"}, "pular"),
        ({"pular": None}, "pular"),
        ({"webhooks": [987654]}, "webhooks"),
        ({"destinatarios": ["a@rede.com"], "cron": "0 4 * * *"}, "cron"),
        (["destinatarios"], "corpo"),
    ],
)
def test_patch_invalido_e_400_que_nomeia_o_campo_e_nao_muda_nada(
    cliente: Client, corpo: Any, campo: str
) -> None:
    criado = post(cliente, "/relatorios/agendamentos", AGENDAMENTO).json()
    resposta = patch(cliente, f"/relatorios/agendamentos/{criado['id']}", corpo)
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == campo
    antes = {k: v for k, v in criado.items() if k not in ("ocorrencias",)}
    depois = cliente.get(f"/relatorios/agendamentos/{criado['id']}").json()
    assert {k: depois[k] for k in antes} == antes


def test_patch_de_agendamento_alheio_ou_excluido_e_404(
    cliente: Client, outro_tenant: Tenant
) -> None:
    _, token_b = helpers.criar_usuario(outro_tenant)
    alheio = post(
        helpers.cliente_com_token(token_b), "/relatorios/agendamentos", AGENDAMENTO
    ).json()
    proprio = post(cliente, "/relatorios/agendamentos", AGENDAMENTO).json()
    cliente.delete(f"/relatorios/agendamentos/{proprio['id']}")
    corpo = {"destinatarios": ["intruso@x.com"]}

    assert (
        patch(cliente, f"/relatorios/agendamentos/{alheio['id']}", corpo).status_code
        == 404
    )
    assert (
        patch(cliente, f"/relatorios/agendamentos/{proprio['id']}", corpo).status_code
        == 404
    )
    assert Agendamento.objects.get(pk=alheio["id"]).destinatarios == [
        "contabilidade@rede.com"
    ]


@pytest.mark.parametrize("ident", ["0", "99999999999999999999"])
def test_id_fora_do_intervalo_e_404(cliente: Client, ident: str) -> None:
    assert cliente.get(f"/relatorios/agendamentos/{ident}").status_code == 404


def test_alertas_do_tenant_com_filtro(cliente: Client, outro_tenant: Tenant) -> None:
    criado = post(cliente, "/relatorios/agendamentos", AGENDAMENTO).json()
    _, token_b = helpers.criar_usuario(outro_tenant)
    post(helpers.cliente_com_token(token_b), "/relatorios/agendamentos", AGENDAMENTO)
    agendamento = Agendamento.objects.get(pk=criado["id"])
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=4))
    abertos = cliente.get("/relatorios/alertas?situacao=abertos").json()["alertas"]
    assert len(abertos) == 1
    assert abertos[0]["agendamento_id"] == criado["id"]
    assert abertos[0]["fechado_em"] is None
    assert cliente.get("/relatorios/alertas?situacao=fechados").json()["alertas"] == []
    resposta = cliente.get("/relatorios/alertas?situacao=todos")
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "situacao"


def test_sem_token_e_401(client: Client) -> None:
    resposta = client.get("/relatorios/agendamentos")
    assert resposta.status_code == 401


def test_descricao_diz_o_cron_em_palavras_no_fuso_do_tenant(
    cliente: Client, tenant: Tenant
) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(fuso_horario=fusos.NOVA_YORK)
    travessia = fusos.travessia(timezone.now())

    criado = post(
        cliente, "/relatorios/agendamentos", AGENDAMENTO | {"cron": travessia.cron}
    )
    corpo = criado.json()

    assert criado.status_code == 201
    assert corpo["cron"] == travessia.cron
    assert corpo["descricao"] == (
        f"{em_palavras(travessia.cron)} ({fusos.NOVA_YORK}); "
        f"próximo: {travessia.locais[0]}"
    )
    assert corpo["proximos_disparos"] == [
        f"{d:%Y-%m-%dT%H:%M:%SZ}" for d in travessia.disparos
    ]
    lista = cliente.get("/relatorios/agendamentos").json()["agendamentos"]
    assert [a["descricao"] for a in lista] == [corpo["descricao"]]
    pausado = post(cliente, f"/relatorios/agendamentos/{corpo['id']}/pausar")
    assert pausado.json()["descricao"] == (
        f"{em_palavras(travessia.cron)} ({fusos.NOVA_YORK}); sem próximo disparo"
    )


def test_descricao_e_so_leitura(cliente: Client) -> None:
    resposta = post(
        cliente, "/relatorios/agendamentos", AGENDAMENTO | {"descricao": "todo dia"}
    )

    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "descricao"
    assert not Agendamento.objects.exists()


def test_lista_le_o_fuso_de_todos_numa_consulta(
    cliente: Client, tenant: Tenant
) -> None:
    helpers.criar_agendamento(tenant)
    cliente.get("/relatorios/agendamentos")  # warm the token cache
    with CaptureQueriesContext(connection) as um:
        cliente.get("/relatorios/agendamentos")
    for minuto in range(1, 4):
        helpers.criar_agendamento(tenant, cron=f"{minuto} 3 1 * *")
    with CaptureQueriesContext(connection) as quatro:
        lista = cliente.get("/relatorios/agendamentos").json()["agendamentos"]

    assert len(lista) == 4
    assert all("(horário de Brasília); próximo: " in a["descricao"] for a in lista)
    assert len(quatro) == len(um), "\n".join(q["sql"] for q in quatro)


@pytest.mark.parametrize(
    "cron", ["R 3 * * *", "0 R * * *", "0 3 R * *", "H 3 * * *", "r(0-30) 3 * * *"]
)
def test_cron_com_campo_aleatorio_e_400_que_nomeia_o_campo(
    cliente: Client, cron: str
) -> None:
    # croniter picks a new time at each parse: it would never fire when due.
    resposta = post(cliente, "/relatorios/agendamentos", AGENDAMENTO | {"cron": cron})
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "cron"
    assert "aleatório" in resposta.json()["erro"]
    assert not Agendamento.objects.exists()
