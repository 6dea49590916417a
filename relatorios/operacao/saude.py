"""Health endpoints for an external monitor: no auth, JSON, no tenant data.

- `GET /healthz` (liveness): this process answers, and nothing else: no
  database. A liveness probe that fails restarts the process, and restarting
  every web process because PostgreSQL is away fixes nothing and makes the
  recovery slower; a database outage is readiness's business.
- `GET /readyz` (readiness): the database answers (one statement), every
  migration is applied (checked until it is true once per process, then
  remembered: migrations are not unapplied under a running process), at
  least one cluster beat within RELATORIOS_ORFAO_APOS_S and, when
  RELATORIOS_VERIFICADOR_MAX_S is set, a checker of absence alerts ran within
  it. This is the one silence no check inside a cluster can report: no
  cluster at all.

503 with the reasons (`problemas`) when a check fails; never cached.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from relatorios.fila import clusters

logger = logging.getLogger(__name__)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return _resposta([])


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    try:
        saude = clusters.saude()
        pendentes = migracoes_pendentes()
    except DatabaseError as erro:
        logger.warning("readyz: banco indisponível", exc_info=True)
        return _resposta([f"banco indisponível ({type(erro).__name__})"])
    encontrados = problemas(saude)
    if pendentes:
        encontrados.append(f"{pendentes} migrações não aplicadas")
    return _resposta(encontrados, **saude)


_migracoes_em_dia = False


def migracoes_pendentes() -> int:
    """Migrations on disk not applied to the database (0 is remembered)."""
    global _migracoes_em_dia
    if _migracoes_em_dia:
        return 0
    executor = MigrationExecutor(connection)
    plano = executor.migration_plan(executor.loader.graph.leaf_nodes())
    _migracoes_em_dia = not plano
    return len(plano)


def problemas(saude: clusters.Saude) -> list[str]:
    """Why the background half is not ready (empty: it is)."""
    encontrados = []
    orfao = settings.RELATORIOS_ORFAO_APOS_S
    if saude["clusters_vivos"] == 0:
        encontrados.append(f"nenhum cluster bateu nos últimos {orfao} s")
    limite = settings.RELATORIOS_VERIFICADOR_MAX_S
    idade = saude["verificador_idade_s"]
    if limite > 0 and (idade is None or idade > limite):
        encontrados.append(f"o verificador não rodou nos últimos {limite:g} s")
    return encontrados


def _resposta(problemas: list[str], **campos: object) -> JsonResponse:
    corpo = {"status": "falha" if problemas else "ok", **campos}
    corpo["problemas"] = problemas
    return JsonResponse(corpo, status=503 if problemas else 200)
