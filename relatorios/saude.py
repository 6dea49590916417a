"""Health endpoints for an external monitor: no auth, JSON, one query each.

- `GET /healthz`: this process answers and the database answers `SELECT 1`.
- `GET /readyz`: the background half works: at least one cluster beat within
  RELATORIOS_ORFAO_APOS_S and, when RELATORIOS_VERIFICADOR_MAX_S is set, a
  checker of absence alerts ran within it. This is the one silence no check
  inside a cluster can report: no cluster at all.

503 with the reasons (`problemas`) when a check fails; never cached.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from relatorios import clusters

logger = logging.getLogger(__name__)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as erro:
        logger.warning("healthz: banco indisponível", exc_info=True)
        return _resposta([f"banco indisponível ({type(erro).__name__})"])
    return _resposta([])


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    try:
        saude = clusters.saude()
    except DatabaseError as erro:
        logger.warning("readyz: banco indisponível", exc_info=True)
        return _resposta([f"banco indisponível ({type(erro).__name__})"])
    return _resposta(problemas(saude), **saude)


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
