from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from django.apps import AppConfig
from django.conf import settings
from django.contrib import admin
from django.contrib.admin import apps as admin_apps
from django.core import checks
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path

# Fields no admin query may filter, search or order on, on any model and
# through any relation: a filter on a secret is an oracle (a right prefix
# lists the row, a wrong one does not), so a viewer could read it back one
# character at a time. Webhook.segredo, DRF's Token.key, the user's password.
CAMPOS_SECRETOS = frozenset({"segredo", "key", "password"})


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
        checks.register(verificar_email, checks.Tags.security, deploy=True)
        checks.register(verificar_url_base, deploy=True)


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


def verificar_email(**kwargs: Any) -> list[checks.CheckMessage]:
    """Django's console backend, our default so `make run` needs no mail
    server, writes each message whole to the process's standard output: in a
    deployment that is the log stream, and a report's email is a tenant's
    data, never a log line (docs/seguranca.md, "Logs")."""
    if settings.DEBUG or not settings.EMAIL_BACKEND.endswith(".console.EmailBackend"):
        return []
    return [
        checks.Warning(
            "EMAIL_BACKEND is the console backend: every email, its body "
            "included, would be written to this process's output, beside the logs",
            hint="set EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend "
            "and EMAIL_HOST (docs/operacao.md, deploy checklist)",
            id="relatorios.W001",
        )
    ]


def verificar_url_base(**kwargs: Any) -> list[checks.CheckMessage]:
    """Emails carry links (the job's page, a scheduled report's signed
    download): without RELATORIOS_URL_BASE they are bare paths no recipient
    can open."""
    if settings.DEBUG or settings.RELATORIOS_URL_BASE:
        return []
    return [
        checks.Warning(
            "RELATORIOS_URL_BASE is empty: notification emails and webhooks would "
            "carry paths (/baixar/...), not links their recipients can open",
            hint="set RELATORIOS_URL_BASE=https://<the public address of the web>",
            id="relatorios.W002",
        )
    ]


# Django's admin site, for support staff: only users without a tenant enter.
# A tenant's manager never enters the admin, even if someone ticked "equipe"
# on their account: the admin shows every tenant's data. Its landing page opens
# with the numbers support looks at first (`admin.indicadores`); `painel/` is
# the operations dashboard (`admin.painel`). It lives here,
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

    def admin_view(self, view: Callable[..., Any], cacheable: bool = False) -> Any:
        """Every admin URL, ours and third parties' ModelAdmins alike, refuses a
        query string that filters on a secret or carries a NUL (PostgreSQL
        cannot compare text with it, so a filter would raise DataError: 500)."""
        protegida = super().admin_view(view, cacheable)

        def vista(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if recusa := consulta_recusada(request):
                return HttpResponseBadRequest(recusa)
            return protegida(request, *args, **kwargs)

        return vista

    def get_urls(self) -> list[URLPattern | URLResolver]:
        return [
            path(
                "painel/",
                self.admin_view(self.painel_de_operacao),
                name="painel",
            ),
            *super().get_urls(),
        ]

    def painel_de_operacao(self, request: HttpRequest) -> TemplateResponse:
        """The operations dashboard (`relatorios.admin.painel`)."""
        from relatorios.admin import painel

        return painel.painel(request, site=self)

    def index(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        from relatorios.admin import indicadores

        contexto = dict(extra_context or {})
        if request.user.has_perm("relatorios.view_relatoriojob"):
            contexto["indicadores"] = indicadores.calcular()
        return super().index(request, extra_context=contexto)


def consulta_recusada(request: HttpRequest) -> str | None:
    pares = list(request.GET.lists())
    # A change form carries the list's filters along, encoded in one parameter.
    for filtros in request.GET.getlist("_changelist_filters"):
        pares += [(k, [v]) for k, v in parse_qsl(filtros, keep_blank_values=True)]
    for nome, valores in pares:
        if "\x00" in nome or any("\x00" in valor for valor in valores):
            return "consulta com caractere NUL"
        if CAMPOS_SECRETOS & set(nome.split(LOOKUP_SEP)):
            return f"filtro não permitido: {nome}"
    if "\x00" in request.path:
        return "endereço com caractere NUL"
    return None


class AdminDeSuporteConfig(admin_apps.AdminConfig):
    """django.contrib.admin with SiteDeSuporte as its default site."""

    # This module's default app is RelatoriosConfig; settings name this one.
    default = False

    default_site = "relatorios.apps.SiteDeSuporte"
