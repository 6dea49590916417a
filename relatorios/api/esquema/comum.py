"""What every operation shares: the token, the headers, the errors.

The other modules of the package build their operations from these: each
answers `COMUNS` and lists its headers with `cabecalhos`.
"""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from relatorios.tipos.normalizacao import CODIGO_LOJA_MAX

# --- Authentication -----------------------------------------------------------------


class EsquemaDoToken(OpenApiAuthenticationExtension):
    """`Authorization: Token <chave>`, described for the API's clients."""

    target_class = "relatorios.api.autenticacao.TokenComCache"
    name = "tokenAuth"
    # Above drf-spectacular's own TokenAuthentication extension (a superclass).
    priority = 1

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "`Token <chave>`: a chave que `manage.py criar_tenant` imprime. "
                "O tenant é o do usuário do token; nunca um parâmetro."
            ),
        }


# --- Headers ---------------------------------------------------------------------

_RETRY_AFTER = (
    "Segundos a esperar antes de consultar de novo (job em andamento) ou de "
    "repetir o pedido (429)."
)


def location(*codigos: int, descricao: str) -> OpenApiParameter:
    return OpenApiParameter(
        "Location",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=list(codigos),
        required=True,
        description=descricao,
    )


def retry_after(*codigos: int, obrigatorio: bool = True) -> OpenApiParameter:
    return OpenApiParameter(
        "Retry-After",
        OpenApiTypes.INT,
        OpenApiParameter.HEADER,
        response=list(codigos),
        required=obrigatorio,
        description=_RETRY_AFTER,
    )


_WWW_AUTHENTICATE = OpenApiParameter(
    "WWW-Authenticate",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[401],
    required=True,
    description="Sempre `Token`.",
)


def cabecalhos(*proprios: OpenApiParameter) -> list[OpenApiParameter]:
    """An operation's own headers plus those of the answers every one gives."""
    return [*proprios, retry_after(429), _WWW_AUTHENTICATE]


# --- Errors ------------------------------------------------------------------------


class ErroItemSerializer(serializers.Serializer):
    erro = serializers.CharField()
    campo = serializers.CharField(required=False)


class ErroSerializer(serializers.Serializer):
    # Every error of the API: {"erro"} and, for a bad field, {"campo"}.

    erro = serializers.CharField(help_text="O motivo, em português.")
    campo = serializers.CharField(
        required=False, help_text="O campo do corpo ou da consulta que está errado."
    )
    erros = ErroItemSerializer(
        many=True, required=False, help_text="Quando há mais de um erro."
    )


def erro(descricao: str, *exemplos: tuple[str, dict[str, str]]) -> OpenApiResponse:
    return OpenApiResponse(
        ErroSerializer,
        description=descricao,
        examples=[OpenApiExample(nome, valor) for nome, valor in exemplos],
    )


E400 = erro(
    "Corpo ou parâmetro inválido; `campo` diz qual.",
    (
        "inicio depois de fim",
        {"erro": "inicio deve ser anterior ou igual a fim", "campo": "inicio"},
    ),
    ("não é JSON", {"erro": "corpo inválido: envie um objeto JSON", "campo": "corpo"}),
)
E401 = erro(
    "Sem token, ou token desconhecido.",
    (
        "sem token",
        {"erro": "credenciais ausentes: envie 'Authorization: Token <chave>'"},
    ),
)
E403 = erro(
    "Usuário sem tenant (suporte).",
    (
        "sem tenant",
        {
            "erro": "usuário sem tenant: a API de relatórios é para usuários "
            "de um tenant"
        },
    ),
)
E404 = erro(
    "Não existe, ou é de outro tenant (nunca 403: ids são sequenciais).",
    ("não encontrado", {"erro": "não encontrado"}),
)


def limite_do_tenant(variavel: str, exemplo: str) -> OpenApiResponse:
    """The 409 of a create when the tenant already has as many as `variavel`."""
    return erro(
        f"O tenant já tem o máximo permitido (`{variavel}`): exclua um antes "
        "de criar outro. Esperar não resolve (não é um 429).",
        ("limite do tenant", {"erro": exemplo}),
    )


E413 = erro(
    "Corpo acima de RELATORIOS_CORPO_MAX_BYTES (256 KiB), recusado pelo "
    "Content-Length antes de ser lido.",
    ("grande demais", {"erro": "corpo grande demais: o limite é 262144 bytes"}),
)
E429 = erro(
    "Limite de pedidos por token excedido (ou, ao submeter, de jobs pendentes "
    "do tenant); `Retry-After` diz quando tentar de novo.",
    (
        "limite por token",
        {"erro": "limite de 600 pedidos a cada 60 s excedido: tente de novo em 12 s"},
    ),
)

E406 = erro(
    "`Accept` não admite JSON (nem `*/*`): a API só responde JSON aqui.",
    (
        "accept impossível",
        {"erro": "Não foi possível satisfazer a requisição do cabeçalho Accept."},
    ),
)

# Answered by every operation: authentication, tenant, the per-token limit.
# The downloads (CSV, Excel) answer whatever `Accept` says, so never 406;
# every other operation negotiates and answers 406 to an Accept without JSON.
DOWNLOADS: dict[int, OpenApiResponse] = {401: E401, 403: E403, 429: E429}
COMUNS: dict[int, OpenApiResponse] = {**DOWNLOADS, 406: E406}

# --- Fields ------------------------------------------------------------------------

# Here, not in `jobs`: the report parameters and the schedules both take lojas.


def codigo_de_loja() -> serializers.CharField:
    # normalizacao._lojas: stripped, 1 to CODIGO_LOJA_MAX characters, no
    # control characters.
    return serializers.CharField(
        min_length=1,
        max_length=CODIGO_LOJA_MAX,
        validators=[RegexValidator(_CODIGO_DE_LOJA)],
    )


_CODIGO_DE_LOJA = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
# A text without control characters (a schedule's nome: agenda.criar); the
# empty one is allow_blank's.
SEM_CONTROLE = r"^[^\x00-\x1f\x7f]+$"
