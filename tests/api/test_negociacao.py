"""The remembered content negotiation chooses exactly what DRF's would."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import yaml
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from relatorios.api.negociacao import JSONDeSaida, NegociacaoMemorizada
from relatorios.models import Tenant
from tests import helpers
from tests.processos import RAIZ

ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=4",
    "application/*",
    "text/html",
    "text/html, application/json;q=0.9",
    "application/vnd.oai.openapi",
    "application/vnd.oai.openapi+json, */*;q=0.1",
    "application/yaml",
    "image/png",
    "",
    ";;;,,",
]
CONJUNTOS: list[list[type[BaseRenderer]]] = [
    [JSONRenderer],
    [JSONRenderer, BrowsableAPIRenderer],
    [OpenApiYamlRenderer, OpenApiJsonRenderer],
]


def escolha(
    negociacao: Any, accept: str | None, classes: list[type], caminho: str
) -> Any:
    cabecalhos = {} if accept is None else {"HTTP_ACCEPT": accept}
    pedido = Request(APIRequestFactory().get(caminho, **cabecalhos))
    renderers = [classe() for classe in classes]
    try:
        renderer, tipo = negociacao.select_renderer(pedido, renderers)
    except exceptions.NotAcceptable:
        return "406"
    return renderers.index(renderer), tipo


@pytest.mark.parametrize(
    "caminho",
    ["/relatorios/jobs/1", "/relatorios/jobs/1?format=json", "/relatorios/jobs/1?x=1"],
)
@pytest.mark.parametrize("classes", [*CONJUNTOS, [JSONRenderer, OpenApiJsonRenderer]])
@pytest.mark.parametrize("accept", ACCEPTS)
def test_escolhe_o_mesmo_que_o_drf(
    accept: str | None, classes: list[type], caminho: str
) -> None:
    """Fixed (JSON first, a common Accept), remembered or DRF's own path:
    always DRF's choice, 406 included."""
    esperado = escolha(DefaultContentNegotiation(), accept, classes, caminho)
    # Twice: the first computes, the second is remembered.
    assert escolha(NegociacaoMemorizada(), accept, classes, caminho) == esperado
    assert escolha(NegociacaoMemorizada(), accept, classes, caminho) == esperado


@pytest.mark.django_db
def test_accept_impossivel_e_406_json_pela_api(tenant: Tenant) -> None:
    cliente = helpers.cliente_com_token(helpers.criar_usuario(tenant)[1])
    for _ in range(2):
        resposta = cliente.get("/relatorios/jobs/1", HTTP_ACCEPT="image/png")
        assert resposta.status_code == 406
        assert resposta["Content-Type"] == "application/json"
        assert set(resposta.json()) == {"erro"}


@pytest.mark.django_db
def test_o_contrato_lista_o_406_de_cada_operacao_que_o_responde(
    tenant: Tenant,
) -> None:
    """Every operation that negotiates answers 406 {"erro"} to an Accept
    without JSON, and the contract says so; the downloads never do."""
    contrato = yaml.safe_load((RAIZ / "docs" / "openapi.yaml").read_text())
    cliente = helpers.cliente_com_token(helpers.criar_usuario(tenant)[1])
    respondem, documentam = set(), set()
    for caminho, operacoes in contrato["paths"].items():
        url = re.sub(r"\{[^}]+\}", "1", caminho)
        for metodo, operacao in operacoes.items():
            if metodo not in ("get", "post", "put", "patch", "delete"):
                continue
            resposta = getattr(cliente, metodo)(url, HTTP_ACCEPT="image/png")
            if resposta.status_code == 406:
                assert resposta.json().keys() == {"erro"}
                respondem.add((metodo, caminho))
            if "406" in operacao["responses"]:
                documentam.add((metodo, caminho))

    assert respondem == documentam
    assert ("post", "/relatorios/vendas") in respondem
    assert ("get", "/relatorios/jobs/{job_id}/resultado.csv") not in respondem


@pytest.mark.parametrize(
    "dados",
    [
        {"erro": "não", "campo": "fim"},
        {"texto": "a\u2028b\u2029c", "v": Decimal("1.10"), "d": [1, 2.5, None, True]},
        {"quando": datetime(2026, 1, 5, 12, 30, tzinfo=UTC), "id": 7},
        [],
        "só texto",
        None,
    ],
)
@pytest.mark.parametrize(
    ("aceito", "contexto"),
    [
        (None, None),
        ("application/json", {}),
        ("application/json; indent=4", {}),
        ("application/json", {"indent": 2}),
    ],
)
def test_json_de_saida_igual_ao_do_drf(dados: Any, aceito: Any, contexto: Any) -> None:
    assert JSONDeSaida().render(dados, aceito, contexto) == JSONRenderer().render(
        dados, aceito, contexto
    )
