"""The pages' forms and query strings against text no database can store.

Django decodes a form and a query string with the charset the request's
Content-Type names. Some Python codecs make a lone UTF-16 surrogate out of
plain ASCII (`raw_unicode_escape`: the six bytes `\\ud800`), which no form
field checks for and PostgreSQL's driver cannot encode; `%00` is a NUL, which
PostgreSQL's text refuses. Each is a 400 naming the field, and nothing is
written.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from relatorios.models import Agendamento, RelatorioJob, Tenant, Usuario, Webhook
from tests import helpers
from tests.paginas.test_paginas_agendamentos import NOVO

pytestmark = pytest.mark.django_db

# The pages' schedule form without stores (all of them): plain strings.
AGENDAMENTO = {k: v for k, v in NOVO.items() if k != "lojas"}
PEDIDO = {"vendas-inicio": "2026-01-01", "vendas-fim": "2026-01-31"}
WEBHOOK = {"url": "https://exemplo.com.br/ganchos", "eventos": "job.pronto"}
LOGIN = {"username": "gerente", "password": "senha-de-teste-123"}

# Each form, its valid fields, and the field that carries the hostile text.
FORMULARIOS = [
    pytest.param("/painel/agendamentos/novo/", AGENDAMENTO, "nome", id="agendamento"),
    pytest.param(
        "/painel/agendamentos/novo/", AGENDAMENTO, "destinatarios", id="destinatarios"
    ),
    pytest.param("/painel/relatorios/vendas/", PEDIDO, "vendas-inicio", id="pedido"),
    pytest.param("/painel/webhooks/", WEBHOOK, "url", id="webhook"),
    pytest.param("/entrar/", LOGIN, "username", id="login"),
]


@pytest.fixture
def cliente(tenant: Tenant) -> Client:
    gerente = helpers.criar_usuario(tenant, username="gerente")[0]
    cliente = Client(raise_request_exception=False)
    cliente.force_login(gerente)
    return cliente


def multipart(campos: dict[str, Any]) -> bytes:
    """A multipart body; str values as ASCII, bytes values as they are."""
    corpo = b""
    for nome, valor in campos.items():
        bruto = valor if isinstance(valor, bytes) else valor.encode("ascii")
        corpo += (
            f'--L\r\nContent-Disposition: form-data; name="{nome}"\r\n\r\n'.encode()
            + bruto
            + b"\r\n"
        )
    return corpo + b"--L--\r\n"


def escritas() -> tuple[int, ...]:
    return (
        Agendamento.objects.count(),
        RelatorioJob.objects.count(),
        Webhook.objects.count(),
        Usuario.objects.filter(last_login__isnull=False).count(),
    )


@pytest.mark.parametrize(("caminho", "validos", "campo"), FORMULARIOS)
def test_surrogate_no_formulario_por_charset_e_400_nomeando_o_campo(
    cliente: Client, caminho: str, validos: dict[str, str], campo: str
) -> None:
    antes = escritas()
    # Six ASCII bytes that raw_unicode_escape decodes to U+D800 alone.
    corpo = multipart(validos | {campo: validos[campo] + "\\ud800"})
    resposta = cliente.post(
        caminho,
        data=corpo,
        content_type="multipart/form-data; boundary=L; charset=raw_unicode_escape",
    )
    assert resposta.status_code == 400, resposta.content[:300]
    assert resposta.content.decode().startswith(f"{campo}: ")
    assert escritas() == antes


@pytest.mark.parametrize(("caminho", "validos", "campo"), FORMULARIOS)
def test_nul_no_formulario_e_400_nomeando_o_campo(
    cliente: Client, caminho: str, validos: dict[str, str], campo: str
) -> None:
    antes = escritas()
    resposta = cliente.post(caminho, validos | {campo: "a\x00b"})
    assert resposta.status_code == 400, resposta.content[:300]
    assert resposta.content.decode().startswith(f"{campo}: ")
    assert escritas() == antes


@pytest.mark.parametrize(
    "caminho", ["/painel/", "/painel/agendamentos/", "/painel/webhooks/", "/entrar/"]
)
def test_consulta_com_surrogate_por_charset_e_400(
    cliente: Client, caminho: str
) -> None:
    resposta = cliente.get(
        f"{caminho}?pagina=%5Cud800",
        CONTENT_TYPE="text/plain; charset=raw_unicode_escape",
    )
    assert resposta.status_code == 400
    assert resposta.content.decode().startswith("pagina: ")


def test_bytes_de_surrogate_em_utf8_viram_o_caractere_de_substituicao(
    cliente: Client, tenant: Tenant
) -> None:
    # CESU-8's encoding of U+D800 is invalid UTF-8: Django decodes it as
    # U+FFFD, an ordinary character that any column can store.
    resposta = cliente.post(
        "/painel/agendamentos/novo/",
        data=multipart(AGENDAMENTO | {"nome": b"Fechamento \xed\xa0\x80"}),
        content_type="multipart/form-data; boundary=L",
    )
    assert resposta.status_code == 302, resposta.content[:300]
    assert (
        Agendamento.objects.get(tenant=tenant).nome == "Fechamento \ufffd\ufffd\ufffd"
    )
