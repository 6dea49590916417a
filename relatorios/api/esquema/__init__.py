"""The OpenAPI 3 contract of the API: what each operation takes and answers.

The views stay thin: each wears one decorator from here (`@esquema.X`), and
the shapes below are documentation-only serializers. They are checked
against the real answers, not trusted: `tests/api/test_contrato.py` runs
schemathesis against a live server with this schema, and
`tests/api/test_openapi.py` fails when the committed `docs/openapi.yaml` drifts.

Submitting is one operation per registered report type (`submeter_vendas`,
...), not one `/relatorios/{tipo}` with an enum: each type's `200` carries
its own `resultado` shape, so a client generator gets one typed method and
one typed result per report, and a schema tool can check each result exactly.

The declarations live in one module per resource (`jobs`, `agendamentos`,
`webhooks`) over `comum`, what they all share; `ganchos` holds the hooks.
This package re-exports what the views (`esquema.X`) and the settings
(`relatorios.api.esquema.X`, by dotted string) name, so neither depends on
the layout.
"""

from __future__ import annotations

from relatorios.api.esquema.agendamentos import (
    alterar_entrega_do_agendamento,
    criar_agendamento,
    excluir_agendamento,
    listar_agendamentos,
    listar_alertas,
    pausar_agendamento,
    retomar_agendamento,
    ver_agendamento,
)

# EsquemaDoToken registers itself with drf-spectacular when its module is
# imported: re-exported so that importing the package is enough.
from relatorios.api.esquema.comum import EsquemaDoToken
from relatorios.api.esquema.ganchos import (
    acrescentar_links,
    limites_configurados,
    so_a_api,
)
from relatorios.api.esquema.jobs import (
    STATUS_EM_ANDAMENTO,
    STATUS_FALHOU,
    STATUS_PRONTO,
    EsquemaDoSubmeter,
    resultado_csv,
    resultado_xlsx,
    status_do_job,
)
from relatorios.api.esquema.webhooks import (
    criar_webhook,
    excluir_webhook,
    listar_webhooks,
    ver_webhook,
)

__all__ = [
    "STATUS_EM_ANDAMENTO",
    "STATUS_FALHOU",
    "STATUS_PRONTO",
    "EsquemaDoSubmeter",
    "EsquemaDoToken",
    "acrescentar_links",
    "alterar_entrega_do_agendamento",
    "criar_agendamento",
    "criar_webhook",
    "excluir_agendamento",
    "excluir_webhook",
    "limites_configurados",
    "listar_agendamentos",
    "listar_alertas",
    "listar_webhooks",
    "pausar_agendamento",
    "resultado_csv",
    "resultado_xlsx",
    "retomar_agendamento",
    "so_a_api",
    "status_do_job",
    "ver_agendamento",
    "ver_webhook",
]
