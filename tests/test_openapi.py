from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.test import Client, override_settings

from tests import processos

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
        "/relatorios/jobs/{job_id}",
        "/relatorios/jobs/{job_id}/resultado.csv",
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
