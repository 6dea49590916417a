"""An open stream lives no longer than its credential: a real events process,
real streams, and the revocations a support desk or a user makes."""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from rest_framework.authtoken.models import Token

from relatorios.models import EstadoDoJob, RelatorioJob, Tenant, Usuario
from tests import helpers, processos
from tests.api.test_eventos import eventos, submeter  # noqa: F401 (the fixture)
from tests.sse import Fluxo, abrir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

# The bound docs/api.md promises (5 s), plus what the test's own polling adds.
LIMITE_S = 7.0


def aberto(url: str, **kwargs: str) -> Fluxo:
    fluxo = abrir(f"{url}/relatorios/eventos", **kwargs)
    assert fluxo.status == 200
    return fluxo


def por_sessao(url: str, usuario: Usuario) -> Fluxo:
    cliente = Client()
    cliente.force_login(usuario)
    cookie = cliente.cookies[settings.SESSION_COOKIE_NAME].value
    fluxo = Fluxo(
        url=f"{url}/relatorios/eventos",
        cabecalhos={"Cookie": f"{settings.SESSION_COOKIE_NAME}={cookie}"},
    ).abrir()
    assert fluxo.status == 200
    return fluxo


def apagar_o_token(usuario: Usuario, outro: Tenant) -> None:
    Token.objects.filter(user=usuario).delete()


def desativar(usuario: Usuario, outro: Tenant) -> None:
    Usuario.objects.filter(pk=usuario.pk).update(is_active=False)


def mudar_de_tenant(usuario: Usuario, outro: Tenant) -> None:
    Usuario.objects.filter(pk=usuario.pk).update(tenant=outro)


def apagar_as_sessoes(usuario: Usuario, outro: Tenant) -> None:
    Session.objects.all().delete()


def trocar_a_senha(usuario: Usuario, outro: Tenant) -> None:
    usuario.set_password("outra-senha-de-teste-456")
    usuario.save()


@pytest.mark.parametrize(
    "revogar", [apagar_o_token, desativar, mudar_de_tenant], ids=lambda f: f.__name__
)
def test_fluxo_por_token_termina_quando_a_credencial_e_revogada(
    tenant: Tenant,
    outro_tenant: Tenant,
    eventos: Callable[..., str],  # noqa: F811
    revogar: Callable[[Usuario, Tenant], None],
) -> None:
    url = eventos()
    usuario, token = helpers.criar_usuario(tenant)
    _, testemunha = helpers.criar_usuario(tenant)
    fluxo, intacto = aberto(url, token=token), aberto(url, token=testemunha)

    revogar(usuario, outro_tenant)

    fluxo.esperar(lambda f: f.terminou, timeout=LIMITE_S, descricao="o fim do fluxo")
    assert not intacto.terminou
    intacto.fechar()


@pytest.mark.parametrize(
    "revogar",
    [apagar_as_sessoes, trocar_a_senha, desativar, mudar_de_tenant],
    ids=lambda f: f.__name__,
)
def test_fluxo_por_sessao_termina_quando_a_credencial_e_revogada(
    tenant: Tenant,
    outro_tenant: Tenant,
    eventos: Callable[..., str],  # noqa: F811
    revogar: Callable[[Usuario, Tenant], None],
) -> None:
    url = eventos()
    usuario, _ = helpers.criar_usuario(tenant)
    _, testemunha = helpers.criar_usuario(tenant)
    fluxo, intacto = por_sessao(url, usuario), aberto(url, token=testemunha)

    revogar(usuario, outro_tenant)

    fluxo.esperar(lambda f: f.terminou, timeout=LIMITE_S, descricao="o fim do fluxo")
    assert not intacto.terminou
    intacto.fechar()


def test_fluxo_do_job_nao_entrega_o_resultado_depois_da_revogacao(
    tenant: Tenant,
    outro_tenant: Tenant,
    eventos: Callable[..., str],  # noqa: F811
    cluster: Callable[..., processos.Processo],
) -> None:
    url = eventos()
    usuario, token = helpers.criar_usuario(tenant)
    job_id = submeter(tenant)
    fluxo = abrir(f"{url}/relatorios/jobs/{job_id}/eventos", token=token)
    fluxo.esperar(lambda f: f.eventos, descricao="o estado inicial")
    # Four chunks, 3 s each: the job ends well after the revocation's bound.
    cluster(RELATORIOS_TESTE_PAUSA_S="3")

    desativar(usuario, outro_tenant)
    fluxo.esperar(lambda f: f.terminou, timeout=LIMITE_S, descricao="o fim do fluxo")
    helpers.esperar(
        lambda: helpers.job(job_id).status == EstadoDoJob.PRONTO,
        descricao="o job pronto",
    )

    assert EstadoDoJob.PRONTO not in [e.dados["status"] for e in fluxo.eventos]


def test_fluxo_termina_na_vida_maxima(
    tenant: Tenant,
    token: str,
    eventos: Callable[..., str],  # noqa: F811
) -> None:
    url = eventos(RELATORIOS_EVENTOS_VIDA_MAX_S="2", RELATORIOS_EVENTOS_REVISAO_S="0.5")
    fluxo = aberto(url, token=token)

    fluxo.esperar(lambda f: f.terminou, timeout=LIMITE_S, descricao="o fim do fluxo")
    assert fluxo.retry == 3000  # EventSource reconnects after it
    assert aberto(url, token=token).status == 200


def test_cada_tenant_tem_sua_parte_do_limite_do_processo(
    tenant: Tenant,
    outro_tenant: Tenant,
    eventos: Callable[..., str],  # noqa: F811
) -> None:
    url = eventos(
        RELATORIOS_EVENTOS_MAX_POR_TENANT="2", RELATORIOS_EVENTOS_MAX_POR_PROCESSO="10"
    )
    a, b, c = (helpers.criar_usuario(tenant)[1] for _ in range(3))
    primeiros = [aberto(url, token=a), aberto(url, token=b)]
    terceiro = abrir(f"{url}/relatorios/eventos", token=c)
    do_outro = abrir(
        f"{url}/relatorios/eventos", token=helpers.criar_usuario(outro_tenant)[1]
    )

    assert terceiro.status == 429
    assert "por empresa" in terceiro.corpo_de_erro["erro"]
    assert do_outro.status == 200
    # A stream that ends gives its tenant's share back.
    primeiros[0].fechar()
    helpers.esperar(
        lambda: abrir(f"{url}/relatorios/eventos", token=c).status == 200,
        descricao="a parte do tenant liberada",
    )


@pytest.mark.parametrize(
    ("metodo", "caminho"),
    [
        ("POST", "/relatorios/vendas"),
        ("GET", "/relatorios/jobs/1"),
        ("GET", "/relatorios/webhooks"),
        ("DELETE", "/relatorios/agendamentos/1"),
    ],
)
def test_o_processo_de_eventos_so_serve_os_fluxos(
    token: str,
    eventos: Callable[..., str],  # noqa: F811
    metodo: str,
    caminho: str,
) -> None:
    url = eventos()

    resposta = httpx.request(
        metodo,
        f"{url}{caminho}",
        headers={"Authorization": f"Token {token}"},
        json={"inicio": "2026-01-01", "fim": "2026-01-31"},
        timeout=30,
    )

    assert resposta.status_code == 404
    assert resposta.json() == {"erro": "não encontrado"}
    assert not RelatorioJob.objects.exists()


def test_abrir_um_fluxo_conta_no_limite_da_api(
    token: str,
    eventos: Callable[..., str],  # noqa: F811
) -> None:
    url = eventos(RELATORIOS_API_LIMITE="2", RELATORIOS_API_JANELA_S="600")
    for _ in range(2):
        aberto(url, token=token).fechar()

    terceiro = abrir(f"{url}/relatorios/eventos", token=token)

    assert terceiro.status == 429
    assert int(terceiro.resposta_cabecalhos["retry-after"]) > 0
    assert "limite de 2 pedidos" in terceiro.corpo_de_erro["erro"]


def test_conexao_que_nunca_manda_um_byte_e_fechada(
    eventos: Callable[..., str],  # noqa: F811
) -> None:
    url = eventos(EVENTOS_CABECALHO_S="2")
    host, _, porta = url.removeprefix("http://").rpartition(":")
    with socket.create_connection((host, int(porta)), timeout=30) as muda:
        # Nothing sent: the server must hang up on its own (b"": closed).
        assert muda.recv(1) == b""
