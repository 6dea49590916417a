from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.test import Client, override_settings

from relatorios.agendamentos import agenda
from relatorios.notificacoes import webhooks
from tests import helpers, processos

ESQUEMA_COMMITADO = processos.RAIZ / "docs" / "openapi.yaml"
REGENERAR = "python manage.py spectacular --file docs/openapi.yaml --validate"


def gerar(destino: Path, *opcoes: str) -> str:
    # The committed schema documents the built-in report types only: the tests'
    # extra types (RELATORIOS_TIPOS_EXTRAS) are not part of the product.
    with override_settings(RELATORIOS_TIPOS_EXTRAS=[]):
        call_command("spectacular", "--file", str(destino), *opcoes)
    return destino.read_text()


def test_o_esquema_commitado_e_o_que_o_codigo_gera(tmp_path: Path) -> None:
    gerado = gerar(tmp_path / "openapi.yaml")
    assert gerado == ESQUEMA_COMMITADO.read_text(), (
        f"docs/openapi.yaml está desatualizado; regenere com: {REGENERAR}"
    )


def test_o_esquema_e_valido_e_sem_avisos(tmp_path: Path) -> None:
    gerar(tmp_path / "openapi.yaml", "--validate", "--fail-on-warn")


def test_cada_tipo_registrado_tem_sua_operacao_de_submeter() -> None:
    esquema = yaml.safe_load(ESQUEMA_COMMITADO.read_text())
    submeter = {
        caminho: operacoes["post"]["operationId"]
        for caminho, operacoes in esquema["paths"].items()
        if operacoes.get("post", {}).get("operationId", "").startswith("submeter_")
    }
    assert submeter == {
        "/relatorios/comissoes": "submeter_comissoes",
        "/relatorios/estoque": "submeter_estoque",
        "/relatorios/fechamento": "submeter_fechamento",
        "/relatorios/vendas": "submeter_vendas",
    }


def test_o_esquema_descreve_toda_url_da_api() -> None:
    esquema = yaml.safe_load(ESQUEMA_COMMITADO.read_text())
    assert sorted(esquema["paths"]) == [
        "/relatorios/agendamentos",
        "/relatorios/agendamentos/{agendamento_id}",
        "/relatorios/agendamentos/{agendamento_id}/pausar",
        "/relatorios/agendamentos/{agendamento_id}/retomar",
        "/relatorios/alertas",
        "/relatorios/comissoes",
        "/relatorios/estoque",
        "/relatorios/eventos",
        "/relatorios/fechamento",
        "/relatorios/jobs/{job_id}",
        "/relatorios/jobs/{job_id}/eventos",
        "/relatorios/jobs/{job_id}/resultado.csv",
        "/relatorios/jobs/{job_id}/resultado.xlsx",
        "/relatorios/vendas",
        "/relatorios/webhooks",
        "/relatorios/webhooks/{webhook_id}",
    ]


@pytest.mark.django_db
def test_o_esquema_e_servido_sem_token() -> None:
    resposta = Client().get("/api/schema/")
    assert resposta.status_code == 200
    assert resposta["Content-Type"].startswith("application/vnd.oai.openapi")
    assert "/relatorios/jobs/{job_id}" in yaml.safe_load(resposta.content)["paths"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("pagina", "pasta"),
    [("/api/docs/", "swagger-ui-dist"), ("/api/redoc/", "redoc")],
)
def test_as_paginas_da_documentacao_usam_so_arquivos_locais(
    pagina: str, pasta: str
) -> None:
    cliente = Client()
    resposta = cliente.get(pagina)
    assert resposta.status_code == 200
    html = resposta.content.decode()
    # No CDN: every script and stylesheet comes from our own static files
    # (drf-spectacular-sidecar's, collected and served by whitenoise).
    externos = re.findall(r'(?:src|href)="(https?://[^"]+)"', html)
    assert externos == []
    locais = re.findall(rf'"(/static/drf_spectacular_sidecar/{pasta}/[^"]+)"', html)
    assert locais
    for arquivo in locais:
        assert cliente.get(arquivo).status_code == 200, arquivo


def propriedade(componente: str, campo: str) -> dict[str, object]:
    esquema = yaml.safe_load(ESQUEMA_COMMITADO.read_text())
    return dict(esquema["components"]["schemas"][componente]["properties"][campo])


# Found by schemathesis (negative data accepted): the server takes null as
# "absent" in these optional fields, so the schema must not call null invalid.
@pytest.mark.parametrize(
    ("componente", "campo"),
    [
        ("Parametros", "agrupar"),
        ("Parametros", "lojas"),
        ("NovoAgendamento", "agrupar"),
        ("NovoAgendamento", "lojas"),
        ("NovoAgendamento", "destinatarios"),
        ("NovoAgendamento", "recuperacao"),
    ],
)
def test_campos_opcionais_que_aceitam_null_sao_nullable(
    componente: str, campo: str
) -> None:
    assert propriedade(componente, campo)["nullable"] is True


def test_pedido_com_null_nos_opcionais_e_aceito(token: str) -> None:
    cliente = helpers.cliente_com_token(token)
    pedido = cliente.post(
        "/relatorios/vendas",
        {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": None, "lojas": None},
        content_type="application/json",
    )
    agendamento = cliente.post(
        "/relatorios/agendamentos",
        {
            "tipo": "vendas",
            "periodo": "ontem",
            "cron": "0 6 * * *",
            "prazo_minutos": 60,
            "agrupar": None,
            "lojas": None,
            "destinatarios": None,
            "recuperacao": None,
        },
        content_type="application/json",
    )
    assert (pedido.status_code, agendamento.status_code) == (202, 201)


# Found by schemathesis (valid data rejected): an empty `eventos` is a 400.
def test_webhook_sem_eventos_e_recusado_e_o_esquema_diz_isso(
    token: str, settings: Any
) -> None:
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = True
    resposta = helpers.cliente_com_token(token).post(
        "/relatorios/webhooks",
        {"url": "http://127.0.0.1:9/ganchos", "eventos": []},
        content_type="application/json",
    )
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "eventos"
    assert propriedade("NovoWebhook", "eventos")["minItems"] == 1


# Found by schemathesis (valid data rejected): unknown fields are a 400, so the
# request bodies are closed; a store code is 1 to 32 visible characters.
@pytest.mark.parametrize("componente", ["Parametros", "NovoAgendamento", "NovoWebhook"])
def test_corpos_de_pedido_nao_aceitam_campos_desconhecidos(componente: str) -> None:
    esquema = yaml.safe_load(ESQUEMA_COMMITADO.read_text())
    assert esquema["components"]["schemas"][componente]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("codigo", "valido"),
    [("L001", True), ("Loja 7", True), ("", False), ("   ", False), ("L\t1", False)],
)
def test_o_esquema_do_codigo_de_loja_segue_a_normalizacao(
    codigo: str, valido: bool
) -> None:
    item = propriedade("Parametros", "lojas")["items"]
    assert isinstance(item, dict)
    cabe = (
        item["minLength"] <= len(codigo) <= item["maxLength"]
        and re.search(item["pattern"], codigo) is not None
    )
    assert cabe is valido


# Issue 17: each text a tenant stores has its limit in the domain function, and
# the contract says the same, so a client learns it before sending.
@pytest.mark.parametrize(
    ("componente", "caminho", "limite"),
    [
        ("NovoAgendamento", ("cron", "maxLength"), agenda.CRON_MAX),
        ("NovoAgendamento", ("nome", "oneOf", 0, "maxLength"), agenda.NOME_MAX),
        ("NovoAgendamento", ("destinatarios", "maxItems"), 20),
        (
            "NovoAgendamento",
            ("destinatarios", "items", "maxLength"),
            agenda.EMAIL_MAX,
        ),
        ("NovoWebhook", ("url", "maxLength"), webhooks.URL_MAX),
        ("NovoWebhook", ("eventos", "maxItems"), len(webhooks.EVENTOS)),
    ],
)
def test_os_limites_do_dominio_estao_no_esquema(
    componente: str, caminho: tuple[str | int, ...], limite: int
) -> None:
    valor: Any = propriedade(componente, str(caminho[0]))
    for chave in caminho[1:]:
        valor = valor[chave]
    assert valor == limite


@pytest.mark.django_db
def test_o_esquema_servido_segue_o_ajuste_de_destinatarios(settings: Any) -> None:
    settings.RELATORIOS_MAX_DESTINATARIOS = 5
    esquema = yaml.safe_load(Client().get("/api/schema/").content)
    propriedades = esquema["components"]["schemas"]["NovoAgendamento"]["properties"]
    assert propriedades["destinatarios"]["maxItems"] == 5


def test_toda_resposta_2xx_diz_a_forma_do_corpo() -> None:
    # A 2xx without a body schema leaves generated clients with None (the
    # status answer once did) and gives schemathesis nothing to check.
    esquema = yaml.safe_load(ESQUEMA_COMMITADO.read_text())

    def sem_forma(resposta: dict[str, Any]) -> bool:
        conteudos = resposta.get("content", {}).values()
        return not conteudos or any("schema" not in c for c in conteudos)

    faltam = [
        (operacao["operationId"], codigo)
        for operacoes in esquema["paths"].values()
        for operacao in operacoes.values()
        for codigo, resposta in operacao["responses"].items()
        if codigo.startswith("2") and codigo != "204" and sem_forma(resposta)
    ]
    assert faltam == []
