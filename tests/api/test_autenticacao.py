from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from relatorios.api import autenticacao
from relatorios.models import Tenant, Usuario
from tests import helpers

pytestmark = pytest.mark.django_db


class Relogio:
    """A monotonic clock the test moves by hand: the bound without sleeping."""

    def __init__(self) -> None:
        self.agora = 1000.0

    def __call__(self) -> float:
        return self.agora


@pytest.fixture
def relogio(monkeypatch: pytest.MonkeyPatch) -> Iterator[Relogio]:
    falso = Relogio()
    monkeypatch.setattr(autenticacao, "relogio", falso)
    with override_settings(RELATORIOS_CACHE_TOKEN_S=5):
        yield falso


def consultas_de_token(cliente: Client, caminho: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as capturadas:
        resposta = cliente.get(caminho)
    n = sum("authtoken_token" in q["sql"] for q in capturadas.captured_queries)
    return resposta.status_code, n


def test_token_em_cache_nao_consulta_o_banco(relogio: Relogio, token: str) -> None:
    cliente = helpers.cliente_com_token(token)
    assert consultas_de_token(cliente, "/relatorios/jobs/1") == (404, 1)
    relogio.agora += 4.9
    assert consultas_de_token(cliente, "/relatorios/jobs/1") == (404, 0)
    relogio.agora += 0.2
    assert consultas_de_token(cliente, "/relatorios/jobs/1") == (404, 1)


def test_token_apagado_para_de_valer_dentro_do_limite(
    relogio: Relogio, token: str
) -> None:
    cliente = helpers.cliente_com_token(token)
    assert cliente.get("/relatorios/jobs/1").status_code == 404
    Token.objects.filter(key=token).delete()
    relogio.agora += 4.9
    assert cliente.get("/relatorios/jobs/1").status_code == 404
    relogio.agora += 0.2
    resposta = cliente.get("/relatorios/jobs/1")
    assert resposta.status_code == 401
    assert resposta["WWW-Authenticate"] == "Token"


def test_usuario_desativado_para_de_valer_dentro_do_limite(
    relogio: Relogio, tenant: Tenant
) -> None:
    usuario, token = helpers.criar_usuario(tenant)
    cliente = helpers.cliente_com_token(token)
    assert cliente.get("/relatorios/jobs/1").status_code == 404
    Usuario.objects.filter(pk=usuario.pk).update(is_active=False)
    relogio.agora += 5.1
    assert cliente.get("/relatorios/jobs/1").status_code == 401


def test_token_desconhecido_nao_fica_em_cache(relogio: Relogio, tenant: Tenant) -> None:
    usuario = Usuario.objects.create_user(username="sem-token", tenant=tenant)
    chave = "a" * 40
    cliente = helpers.cliente_com_token(chave)
    assert cliente.get("/relatorios/jobs/1").status_code == 401
    Token.objects.create(user=usuario, key=chave)
    assert cliente.get("/relatorios/jobs/1").status_code == 404


def test_o_chamador_em_cache_e_imutavel_e_o_mesmo_para_cada_pedido(
    relogio: Relogio, token: str
) -> None:
    """No copy per request: the cached caller cannot be changed by one."""
    import dataclasses

    autenticador = autenticacao.TokenComCache()
    primeiro, chave1 = autenticador.authenticate_credentials(token)
    segundo, chave2 = autenticador.authenticate_credentials(token)
    assert primeiro is segundo
    assert chave1 == chave2 == token
    with pytest.raises(dataclasses.FrozenInstanceError):
        primeiro.tenant_id = 999  # type: ignore[misc]


def test_cache_desligado_consulta_sempre(token: str) -> None:
    cliente = helpers.cliente_com_token(token)
    with override_settings(RELATORIOS_CACHE_TOKEN_S=0):
        assert consultas_de_token(cliente, "/relatorios/jobs/1") == (404, 1)
        assert consultas_de_token(cliente, "/relatorios/jobs/1") == (404, 1)


def test_falta_no_cache_e_uma_consulta_que_carrega_o_mesmo_que_a_do_drf(
    tenant: Tenant, token: str
) -> None:
    """The raw lookup of a miss answers, in one statement, what the API reads
    of the user DRF's ORM query loads."""
    from rest_framework.authentication import TokenAuthentication

    esperado, _ = TokenAuthentication().authenticate_credentials(token)
    with CaptureQueriesContext(connection) as capturadas:
        chamador = autenticacao.ler_chamador(token)
    assert len(capturadas) == 1
    assert chamador.tenant_id == tenant.pk
    for campo in (
        "pk",
        "id",
        "tenant_id",
        "username",
        "email",
        "is_active",
        "is_staff",
        "is_superuser",
        "is_authenticated",
        "is_anonymous",
    ):
        assert getattr(chamador, campo) == getattr(esperado, campo), campo
    assert chamador.get_username() == esperado.get_username()


def test_falta_no_cache_com_usuario_inativo_ou_chave_errada_e_401(
    tenant: Tenant,
) -> None:
    usuario, token = helpers.criar_usuario(tenant)
    Usuario.objects.filter(pk=usuario.pk).update(is_active=False)
    for chave in (token, "b" * 40):
        resposta = helpers.cliente_com_token(chave).get("/relatorios/jobs/1")
        assert resposta.status_code == 401
        assert resposta.json() == {"erro": "token inválido ou usuário inativo"}
