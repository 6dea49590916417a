"""The event streams in the OpenAPI document (a SPECTACULAR_SETTINGS hook).

The streams are Django async views of the events process, not DRF views:
drf-spectacular cannot see them, so this hook writes their two operations.
docs/api.md has the protocol in full.
"""

from __future__ import annotations

from typing import Any

_ERRO = {"$ref": "#/components/schemas/Erro"}


def _erro(descricao: str, exemplo: str, **cabecalhos: Any) -> dict[str, Any]:
    resposta: dict[str, Any] = {
        "content": {
            "application/json": {
                "schema": _ERRO,
                "examples": {"Exemplo": {"value": {"erro": exemplo}}},
            }
        },
        "description": descricao,
    }
    if cabecalhos:
        resposta["headers"] = cabecalhos
    return resposta


_ULTIMO = {
    "in": "header",
    "name": "Last-Event-ID",
    "required": False,
    "schema": {"type": "integer", "format": "int64", "minimum": 0},
    "description": (
        "O `id` do último evento recebido (o `EventSource` do navegador envia "
        "sozinho ao reconectar): o fluxo continua do evento seguinte, sem perda. "
        "Eventos são guardados por `RELATORIOS_EVENTOS_RETENCAO_S` (1 h); além "
        "disso, o fluxo do job envia o estado atual, o do tenant um evento "
        "`lacuna`."
    ),
}
_RETRY_AFTER = {
    "schema": {"type": "integer"},
    "description": "Segundos a esperar antes de tentar de novo.",
    "required": True,
}
_FLUXO = {
    "text/event-stream": {
        "schema": {"type": "string"},
    }
}
_COMUNS = {
    "400": _erro(
        "`Last-Event-ID` que não é um inteiro (`campo`: `Last-Event-ID`).",
        "Last-Event-ID deve ser o id de um evento recebido (um inteiro)",
    ),
    "401": _erro(
        "Sem credenciais, ou token inválido.",
        "credenciais ausentes: envie 'Authorization: Token <chave>'",
        **{
            "WWW-Authenticate": {
                "schema": {"type": "string"},
                "description": "Sempre `Token`.",
                "required": True,
            }
        },
    ),
    "403": _erro(
        "Usuário sem tenant (equipe de suporte).",
        "usuário sem tenant: a API de relatórios é para usuários de um tenant",
    ),
    "429": _erro(
        "Limite de fluxos abertos por token (`RELATORIOS_EVENTOS_MAX_POR_TOKEN`)"
        " ou por processo (`RELATORIOS_EVENTOS_MAX_POR_PROCESSO`); consulte o "
        "estado do job em vez disso.",
        "limite de 20 conexões de eventos abertas por token atingido",
        **{"Retry-After": _RETRY_AFTER},
    ),
}
_SEM_FLUXO = (
    " Também 404 num endereço sem o processo de eventos por trás (o servidor "
    "web sozinho): consulte o estado do job em vez disso."
)

OPERACOES = {
    "/relatorios/jobs/{job_id}/eventos": {
        "get": {
            "operationId": "eventos_do_job",
            "summary": "Eventos de um job (Server-Sent Events)",
            "description": (
                "`text/event-stream`: um evento por mudança do job (estado ou "
                "progresso), cada um com o mesmo JSON de `GET "
                "/relatorios/jobs/{job_id}` em `data:` e o seu `id:`. O primeiro "
                "é o estado atual; o fluxo termina depois de `pronto` ou "
                "`falhou`. `retry:` no início, um comentário a cada 15 s."
            ),
            "parameters": [
                {
                    "in": "path",
                    "name": "job_id",
                    "schema": {"type": "integer", "format": "int64", "minimum": 1},
                    "required": True,
                },
                _ULTIMO,
            ],
            "tags": ["eventos"],
            "security": [{"tokenAuth": []}, {"cookieAuth": []}],
            "responses": {
                "200": {"content": _FLUXO, "description": "O fluxo."},
                "204": {
                    "description": (
                        "O job terminou e `Last-Event-ID` já é o seu último evento:"
                        " nada mais virá (o `EventSource` para de reconectar)."
                    )
                },
                **_COMUNS,
                "404": _erro(
                    "Não existe, ou é de outro tenant (antes de abrir o fluxo)."
                    + _SEM_FLUXO,
                    "não encontrado",
                ),
            },
        }
    },
    "/relatorios/eventos": {
        "get": {
            "operationId": "eventos_do_tenant",
            "summary": "Eventos do tenant (Server-Sent Events)",
            "description": (
                "`text/event-stream` dos jobs, alertas e entregas agendadas do "
                "tenant: `event:` é o tipo (`job.pendente`, `job.executando`, "
                "`job.pronto`, `job.falhou`, `alerta.aberto`, `alerta.fechado`, "
                "`agendamento.entregue`) e `data:` o envelope dos webhooks "
                "(`type`, `timestamp`, `data`). Sem `Last-Event-ID` começa no "
                "próximo evento."
            ),
            "parameters": [_ULTIMO],
            "tags": ["eventos"],
            "security": [{"tokenAuth": []}, {"cookieAuth": []}],
            "responses": {
                "200": {"content": _FLUXO, "description": "O fluxo."},
                **_COMUNS,
                "404": _erro(
                    "Este endereço não tem o processo de eventos por trás."
                    + _SEM_FLUXO.replace(" Também 404", ""),
                    "não encontrado",
                ),
            },
        }
    },
}


def acrescentar_eventos(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    result.setdefault("paths", {}).update(OPERACOES)
    result["paths"] = dict(sorted(result["paths"].items()))
    return result
