"""The SPECTACULAR_SETTINGS hooks: what the declarations cannot say.

They see the schema as data: operations by `operationId`, components by
name, so they import none of the declarations.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from relatorios import tipos

_CAMINHO_DO_SUBMETER = "/relatorios/{tipo}"


def so_a_api(endpoints: list[tuple[Any, ...]], **kwargs: Any) -> list[tuple[Any, ...]]:
    """The API's canonical paths: no trailing-slash twins; one submit per type."""
    resultado = []
    for caminho, regex, metodo, view in endpoints:
        if not caminho.startswith("/relatorios/") or caminho.endswith("/"):
            continue
        if caminho == _CAMINHO_DO_SUBMETER:
            for tipo in sorted(tipos.registro()):
                resultado.append(
                    (
                        f"/relatorios/{tipo}",
                        f"^relatorios/{re.escape(tipo)}$",
                        metodo,
                        view,
                    )
                )
            continue
        resultado.append((caminho, regex, metodo, view))
    return resultado


def _link(operacao: str, parametro: str, descricao: str) -> dict[str, Any]:
    return {
        "operationId": operacao,
        "parameters": {parametro: "$response.body#/id"},
        "description": descricao,
    }


# From an answer that names a resource, to the operations on it (OpenAPI
# links: client generators and schemathesis' stateful tests follow them).
_DO_JOB = {
    "estado": _link("estado_do_job", "job_id", "O estado do job (`Location`)."),
    "csv": _link("resultado_csv", "job_id", "O resultado em CSV, quando pronto."),
    "xlsx": _link(
        "resultado_xlsx", "job_id", "O resultado em Excel (.xlsx), quando pronto."
    ),
}
_DO_AGENDAMENTO = {
    nome: _link(f"{nome}_agendamento", "agendamento_id", f"{nome.capitalize()}.")
    for nome in ("ver", "pausar", "retomar", "excluir")
}
_DO_WEBHOOK = {
    nome: _link(f"{nome}_webhook", "webhook_id", f"{nome.capitalize()}.")
    for nome in ("ver", "excluir")
}
LINKS: dict[tuple[str, str], dict[str, Any]] = {
    ("estado_do_job", "200"): {"csv": _DO_JOB["csv"], "xlsx": _DO_JOB["xlsx"]},
    ("criar_agendamento", "201"): _DO_AGENDAMENTO,
    ("ver_agendamento", "200"): _DO_AGENDAMENTO,
    ("criar_webhook", "201"): _DO_WEBHOOK,
}


# Request bodies whose unknown fields are a 400 (`campo desconhecido`).
CORPOS_FECHADOS = ("Parametros", "NovoAgendamento", "NovoWebhook")


def acrescentar_links(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: what drf-spectacular cannot declare.

    OpenAPI links, and `additionalProperties: false` on the request bodies
    that refuse unknown fields.
    """
    componentes = result.get("components", {}).get("schemas", {})
    for nome in CORPOS_FECHADOS:
        if nome in componentes:
            componentes[nome]["additionalProperties"] = False
    for operacoes in result.get("paths", {}).values():
        for operacao in operacoes.values():
            if not isinstance(operacao, dict) or "operationId" not in operacao:
                continue
            identificador = operacao["operationId"]
            for codigo, resposta in operacao.get("responses", {}).items():
                links = LINKS.get((identificador, codigo))
                if identificador.startswith("submeter_") and codigo in ("200", "202"):
                    links = _DO_JOB
                if links:
                    resposta["links"] = links
    return result


def limites_configurados(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: the limits that are settings, as they are set when
    the schema is generated (a declaration would read them at import)."""
    componentes = result.get("components", {}).get("schemas", {})
    for nome in ("NovoAgendamento", "PatchedEntregaDoAgendamento"):
        campos = componentes.get(nome, {}).get("properties", {})
        if "destinatarios" in campos:
            campos["destinatarios"]["maxItems"] = settings.RELATORIOS_MAX_DESTINATARIOS
    return result
