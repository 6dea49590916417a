"""Abuse limits: the API's per-token limit over real HTTP, the login lockout."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from django.test import Client

from relatorios.models import Tenant
from tests import helpers
from tests.processos import iniciar_web

SENHA = "senha-de-teste-123"


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_limite_por_token_responde_429_com_retry_after(
    tenant: Tenant, pasta_saida: Any
) -> None:
    _, token = helpers.criar_usuario(tenant)
    _, outro_token = helpers.criar_usuario(tenant)
    # Several workers: the count is shared, not per process.
    processo, url = iniciar_web(
        pasta_saida / "web.log",
        RELATORIOS_API_LIMITE="5",
        RELATORIOS_API_JANELA_S="3600",
        WEB_WORKERS="3",
    )
    try:
        alvo = url.removeprefix("http://").split(":")
        respostas = []
        for chave in [token] * 8 + [outro_token]:
            conexao = http.client.HTTPConnection(alvo[0], int(alvo[1]), timeout=20)
            conexao.request(
                "GET",
                "/relatorios/alertas",
                headers={"Authorization": f"Token {chave}"},
            )
            resposta = conexao.getresponse()
            respostas.append((resposta.status, resposta.headers, resposta.read()))
            conexao.close()
    finally:
        processo.parar()

    assert [codigo for codigo, _, _ in respostas] == [200] * 5 + [429] * 3 + [200]
    _, cabecalhos, corpo = respostas[5]
    assert cabecalhos["Content-Type"] == "application/json"
    assert 1 <= int(cabecalhos["Retry-After"]) <= 3600
    erro = json.loads(corpo)
    assert set(erro) == {"erro"}
    assert "limite de 5 pedidos a cada 3600 s" in erro["erro"]


@pytest.mark.django_db
def test_limite_zero_desliga(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_API_LIMITE = 0
    cliente = helpers.cliente_com_token(helpers.criar_usuario(tenant)[1])
    codigos = {cliente.get("/relatorios/alertas").status_code for _ in range(30)}
    assert codigos == {200}


def entrar(cliente: Client, caminho: str, usuario: str, senha: str) -> Any:
    return cliente.post(caminho, {"username": usuario, "password": senha})


@pytest.mark.django_db
@pytest.mark.parametrize("caminho", ["/entrar/", "/admin/login/"])
def test_login_bloqueia_usuario_e_ip_depois_de_falhas(
    tenant: Tenant, settings: Any, caminho: str
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    usuario, _ = helpers.criar_usuario(tenant, is_staff=caminho.startswith("/admin"))
    cliente = Client(REMOTE_ADDR="203.0.113.7")
    falhas = [
        entrar(cliente, caminho, usuario.username, "errada").status_code
        for _ in range(3)
    ]
    bloqueado = entrar(cliente, caminho, usuario.username, SENHA)

    assert falhas[:2] == [200, 200]
    assert bloqueado.status_code == 429
    assert "Acesso bloqueado temporariamente" in bloqueado.content.decode()
    assert "_auth_user_id" not in cliente.session


@pytest.mark.django_db
def test_bloqueio_e_do_par_usuario_e_ip(tenant: Tenant, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 2
    usuario, _ = helpers.criar_usuario(tenant)
    atacante = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(3):
        entrar(atacante, "/entrar/", usuario.username, "errada")
    gerente = Client(REMOTE_ADDR="198.51.100.20")

    resposta = entrar(gerente, "/entrar/", usuario.username, SENHA)

    assert resposta.status_code == 302
    assert gerente.session["_auth_user_id"] == str(usuario.pk)


@pytest.mark.django_db
def test_acerto_zera_as_falhas(tenant: Tenant, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    usuario, _ = helpers.criar_usuario(tenant)
    cliente = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(2):
        entrar(cliente, "/entrar/", usuario.username, "errada")
    assert entrar(cliente, "/entrar/", usuario.username, SENHA).status_code == 302
    cliente.logout()
    for _ in range(2):
        entrar(cliente, "/entrar/", usuario.username, "errada")

    assert entrar(cliente, "/entrar/", usuario.username, SENHA).status_code == 302
