from __future__ import annotations

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path, register_converter
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from relatorios.operacao import exposicao, saude


class IdDeJob:
    """`<job:...>`, an id in every URLconf (job, webhook): digits only; the
    range check (bigint) is the tenant-scoped lookup's."""

    regex = "[0-9]{1,20}"

    def to_python(self, valor: str) -> int:
        return int(valor)

    def to_url(self, valor: int) -> str:
        return str(valor)


register_converter(IdDeJob, "job")

urlpatterns = [
    # The API first: its calls are most of the traffic, and none of its paths
    # (all under relatorios/) is one of the others'.
    path("", include("relatorios.api.urls")),
    path("admin/", admin.site.urls),
    # For an external monitor: no auth, outside /relatorios/
    # (relatorios/operacao/saude.py).
    path("healthz", saude.healthz, name="healthz"),
    path("readyz", saude.readyz, name="readyz"),
    # The API's OpenAPI 3 document and its pages (assets from the sidecar's
    # static files, no CDN); docs/openapi.yaml is the committed copy.
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file of its own
    # (?script): nothing inline, as the Content-Security-Policy requires.
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="schema"),
        name="docs",
    ),
    # Redoc styles itself with styled-components, which writes <style>
    # elements at run time, and searches in a worker it starts from a blob:
    # this page alone may apply inline styles and start such a worker. Its
    # scripts stay 'self' only, and it shows no tenant's data. (Its footer's
    # logo from cdn.redoc.ly is refused, as every CDN is: docs/seguranca.md.)
    path(
        "api/redoc/",
        csp_update({"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
            SpectacularRedocView.as_view(url_name="schema")
        ),
        name="redoc",
    ),
    # For Prometheus: configured networks or a bearer token (operacao/exposicao.py).
    path("metrics", exposicao.exportar, name="metricas"),
    path("", include("relatorios.paginas.urls")),
]

# Under /relatorios/ every error is JSON ({"erro": ...}); elsewhere Django's pages.
handler400 = "relatorios.api.erros.pedido_ruim"
handler403 = "relatorios.api.erros.proibido"
handler404 = "relatorios.api.erros.nao_encontrado"
handler500 = "relatorios.api.erros.erro_do_servidor"
