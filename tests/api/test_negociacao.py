"""The remembered content negotiation chooses exactly what DRF's would."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from relatorios.api.negociacao import NegociacaoMemorizada
from relatorios.models import Tenant
from tests import helpers

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


def escolha(negociacao: Any, accept: str | None, classes: list[type]) -> Any:
    cabecalhos = {} if accept is None else {"HTTP_ACCEPT": accept}
    pedido = Request(APIRequestFactory().get("/relatorios/jobs/1", **cabecalhos))
    renderers = [classe() for classe in classes]
    try:
        renderer, tipo = negociacao.select_renderer(pedido, renderers)
    except exceptions.NotAcceptable:
        return "406"
    return renderers.index(renderer), tipo


@pytest.mark.parametrize("classes", CONJUNTOS)
@pytest.mark.parametrize("accept", ACCEPTS)
def test_escolhe_o_mesmo_que_o_drf(accept: str | None, classes: list[type]) -> None:
    esperado = escolha(DefaultContentNegotiation(), accept, classes)
    # Twice: the first computes, the second is remembered.
    assert escolha(NegociacaoMemorizada(), accept, classes) == esperado
    assert escolha(NegociacaoMemorizada(), accept, classes) == esperado


@pytest.mark.django_db
def test_accept_impossivel_e_406_json_pela_api(tenant: Tenant) -> None:
    cliente = helpers.cliente_com_token(helpers.criar_usuario(tenant)[1])
    for _ in range(2):
        resposta = cliente.get("/relatorios/jobs/1", HTTP_ACCEPT="image/png")
        assert resposta.status_code == 406
        assert resposta["Content-Type"] == "application/json"
        assert set(resposta.json()) == {"erro"}
