"""Django's admin site, for support staff: only users without a tenant enter.

A tenant's manager never enters the admin, even if someone ticked "equipe"
on their account: the admin shows every tenant's data. Its landing page opens
with the numbers support looks at first (`indicadores`).

Listed in INSTALLED_APPS through AdminDeSuporteConfig, so `admin.site`, and
with it every third-party registration (django-q2, DRF tokens), is this site.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest
from django.template.response import TemplateResponse


class SiteDeSuporte(admin.AdminSite):
    site_header = "relatorios · suporte"
    site_title = "relatorios · suporte"
    index_title = "Visão geral"
    index_template = "admin/relatorios/indice.html"

    def has_permission(self, request: HttpRequest) -> bool:
        return super().has_permission(request) and (
            getattr(request.user, "tenant_id", None) is None
        )

    def index(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        from relatorios import indicadores

        contexto = dict(extra_context or {})
        if request.user.has_perm("relatorios.view_relatoriojob"):
            contexto["indicadores"] = indicadores.calcular()
        return super().index(request, extra_context=contexto)


class AdminDeSuporteConfig(AdminConfig):
    """django.contrib.admin with SiteDeSuporte as its default site."""

    default_site = "relatorios.admin_site.SiteDeSuporte"
