"""Abuse limits: the API's per-token limit over real HTTP, the login lockout."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django_q.models import OrmQ

from relatorios.models import RelatorioJob, Tenant
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
    espera = int(cabecalhos["Retry-After"])
    assert erro["erro"] == (
        f"limite de 5 pedidos a cada 3600 s excedido: tente de novo em {espera} s"
    )


@pytest.mark.django_db
def test_limite_zero_desliga(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_API_LIMITE = 0
    cliente = helpers.cliente_com_token(helpers.criar_usuario(tenant)[1])
    codigos = {cliente.get("/relatorios/alertas").status_code for _ in range(30)}
    assert codigos == {200}


PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes"}


def submeter(cliente: Client, pedido: Any = PEDIDO) -> Any:
    return cliente.post(
        "/relatorios/vendas", data=json.dumps(pedido), content_type="application/json"
    )


def pedidos_contados(usuario_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pedidos FROM relatorio_limites_api WHERE usuario_id = %s",
            [usuario_id],
        )
        linha = cursor.fetchone()
    return int(linha[0]) if linha else 0


@pytest.mark.django_db
def test_status_e_acerto_contam_o_limite_na_propria_consulta(
    tenant: Tenant, settings: Any
) -> None:
    """The two hot requests stay one round trip with the limit on (B2)."""
    settings.RELATORIOS_API_LIMITE = 100
    usuario, token = helpers.criar_usuario(tenant)
    cliente = helpers.cliente_com_token(token)
    job_id = submeter(cliente).json()["id"]  # also caches the token

    for pedir in (
        lambda: cliente.get(f"/relatorios/jobs/{job_id}"),
        lambda: submeter(cliente),
    ):
        with CaptureQueriesContext(connection) as capturadas:
            resposta = pedir()
        assert resposta.status_code in (200, 202)
        assert resposta.json()["id"] == job_id
        sqls = [q["sql"] for q in capturadas.captured_queries]
        assert len(sqls) == 1, sqls
        assert "relatorio_limites_api" in sqls[0]
        assert "relatorio_jobs" in sqls[0]
    assert pedidos_contados(usuario.pk) == 3


@pytest.mark.django_db
def test_acima_do_limite_status_e_submit_sao_429_e_nada_e_gravado(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_API_LIMITE = 2
    settings.RELATORIOS_API_JANELA_S = 3600
    usuario, token = helpers.criar_usuario(tenant)
    cliente = helpers.cliente_com_token(token)
    job_id = submeter(cliente).json()["id"]
    assert cliente.get(f"/relatorios/jobs/{job_id}").status_code == 200

    status = cliente.get(f"/relatorios/jobs/{job_id}")
    acerto = submeter(cliente)
    novo = submeter(cliente, {**PEDIDO, "fim": "2026-01-30"})

    for resposta in (status, acerto, novo):
        assert resposta.status_code == 429
        assert set(resposta.json()) == {"erro"}
        assert "limite de 2 pedidos a cada 3600 s" in resposta.json()["erro"]
        assert 1 <= int(resposta["Retry-After"]) <= 3600
    assert list(RelatorioJob.objects.values_list("id", flat=True)) == [job_id]
    assert OrmQ.objects.count() == 1
    assert pedidos_contados(usuario.pk) == 5


@pytest.mark.django_db
def test_pedidos_que_nao_chegam_a_consulta_tambem_contam(
    tenant: Tenant, settings: Any
) -> None:
    """A 400 from normalization or a 404 from an id out of range never runs
    the statement that would count them: they are counted on their own."""
    settings.RELATORIOS_API_LIMITE = 2
    usuario, token = helpers.criar_usuario(tenant)
    cliente = helpers.cliente_com_token(token)

    invalido = submeter(cliente, {**PEDIDO, "inicio": "ontem"})
    fora = cliente.get(f"/relatorios/jobs/{2**63}")
    assert (invalido.status_code, fora.status_code) == (400, 404)
    assert invalido.json()["campo"] == "inicio"
    assert pedidos_contados(usuario.pk) == 2

    # Over the limit, the 429 answers instead of the 400.
    de_novo = submeter(cliente, {**PEDIDO, "inicio": "ontem"})
    assert de_novo.status_code == 429
    assert pedidos_contados(usuario.pk) == 3
    assert not RelatorioJob.objects.exists()


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
    assert "daqui a 15 minutos." in bloqueado.content.decode()
    assert "h:mm:ss" not in bloqueado.content.decode()
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
