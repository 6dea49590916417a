from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.contrib import admin
from django.contrib.admin import apps as admin_apps
from django.core import checks
from django.http import HttpRequest
from django.template.response import TemplateResponse


class RelatoriosConfig(AppConfig):
    name = "relatorios"
    verbose_name = "Relatórios"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from relatorios.jobs import execucao

        post_spawn.connect(execucao.instalar_sinais, dispatch_uid="relatorios-sinais")
        checks.register(verificar_timeouts)
        checks.register(verificar_chave_secreta)


def verificar_timeouts(**kwargs: Any) -> list[checks.CheckMessage]:
    """django-q2 re-delivers a message after `retry` seconds; a report allowed to
    run longer than the budget `retry` was derived from would run twice."""
    from relatorios import tipos

    erros: list[checks.CheckMessage] = []
    for nome, tipo in tipos.registro().items():
        if tipo.timeout() > settings.RELATORIOS_TIMEOUT_S:
            erros.append(
                checks.Error(
                    f"tipo {nome}: timeout {tipo.timeout()} s passa de "
                    f"RELATORIOS_TIMEOUT_S ({settings.RELATORIOS_TIMEOUT_S} s)",
                    hint="raise RELATORIOS_TIMEOUT_S (Q_CLUSTER's retry follows it)",
                    id="relatorios.E001",
                )
            )
    return erros


def verificar_chave_secreta(**kwargs: Any) -> list[checks.CheckMessage]:
    """With DEBUG off, the published dev key is refused by every command that
    runs Django's checks, `qcluster` first among them: a cluster signing queue
    messages with a key anyone can read must not start. The web refuses it in
    config/servidor.py and config/wsgi.py (the web server runs no checks)."""
    from relatorios.operacao.chave import problema_da_chave

    problema = problema_da_chave()
    if problema is None:
        return []
    return [checks.Error(problema, id="relatorios.E002")]


# Django's admin site, for support staff: only users without a tenant enter.
# A tenant's manager never enters the admin, even if someone ticked "equipe"
# on their account: the admin shows every tenant's data. Its landing page opens
# with the numbers support looks at first (`admin.indicadores`). It lives here,
# beside the AppConfig that names it, and not in `relatorios.admin`: Django
# imports the default site while it sets the site up, and importing the admin
# package then would register every ModelAdmin on a site about to be replaced.
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
        from relatorios.admin import indicadores

        contexto = dict(extra_context or {})
        if request.user.has_perm("relatorios.view_relatoriojob"):
            contexto["indicadores"] = indicadores.calcular()
        return super().index(request, extra_context=contexto)


class AdminDeSuporteConfig(admin_apps.AdminConfig):
    """django.contrib.admin with SiteDeSuporte as its default site."""

    # This module's default app is RelatoriosConfig; settings name this one.
    default = False

    default_site = "relatorios.apps.SiteDeSuporte"
