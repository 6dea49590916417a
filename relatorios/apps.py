from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from django.apps import AppConfig
from django.conf import settings
from django.contrib import admin
from django.contrib.admin import apps as admin_apps
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG, IGNORED_PARAMS, PAGE_VAR
from django.core import checks
from django.core.exceptions import BadRequest, FieldError, ValidationError
from django.db import DataError, ProgrammingError, router, transaction
from django.db.models import QuerySet
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path

# Fields no admin query may filter, search or order on, on any model and
# through any relation: a filter on a secret is an oracle (a right prefix
# lists the row, a wrong one does not), so a viewer could read it back one
# character at a time. Webhook.segredo, DRF's Token.key, the user's password,
# and Webhook.url (a chat's incoming webhook URL is its credential).
CAMPOS_SECRETOS = frozenset({"segredo", "key", "password", "url"})


class RelatoriosConfig(AppConfig):
    name = "relatorios"
    verbose_name = "Relatórios"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from relatorios.api import cadeia
        from relatorios.jobs import execucao
        from relatorios.tipos.verificacao import verificar_tipos

        post_spawn.connect(execucao.instalar_sinais, dispatch_uid="relatorios-sinais")
        checks.register(verificar_tipos)
        checks.register(verificar_timeouts)
        checks.register(verificar_chave_secreta)
        checks.register(verificar_email, checks.Tags.security, deploy=True)
        checks.register(verificar_url_base, deploy=True)
        checks.register(cadeia.verificar_middlewares, checks.Tags.security)
        checks.register(
            cadeia.verificar_cookie_do_csrf, checks.Tags.security, deploy=True
        )


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
    # Django's console backend, or ours over it (config/console.py, the default).
    console = (".console.EmailBackend", ".console.EmailNoConsole")
    if settings.DEBUG or not settings.EMAIL_BACKEND.endswith(console):
        return []
    return [
        checks.Warning(
            "EMAIL_BACKEND is the console backend: every email, its body "
            "included, would be written to this process's output, beside the logs",
            hint="set EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend "
            "and EMAIL_HOST (docs/implantacao.md, deploy checklist)",
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
    # The lists get the whole width of a 1280 px laptop (the job list's
    # error column, the schedules' actions): the side menu repeats the
    # index page, one click away in the header.
    enable_nav_sidebar = False

    def has_permission(self, request: HttpRequest) -> bool:
        return super().has_permission(request) and (
            getattr(request.user, "tenant_id", None) is None
        )

    def admin_view(self, view: Callable[..., Any], cacheable: bool = False) -> Any:
        """Every admin URL, ours and third parties' ModelAdmins alike, refuses a
        query string that filters on a secret or carries a NUL (PostgreSQL
        cannot compare text with it, so a filter would raise DataError: 500),
        and answers a list's refused lookup (`ListaProtegida`) as a 400."""
        protegida = super().admin_view(view, cacheable)

        def vista(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if recusa := consulta_recusada(request):
                return _recusada(recusa)
            try:
                return protegida(request, *args, **kwargs)
            except ConsultaRecusada as recusada:
                return _recusada(str(recusada))

        return vista

    def register(
        self,
        model_or_iterable: Any,
        admin_class: type[admin.ModelAdmin] | None = None,
        **options: Any,
    ) -> None:
        """Registers every ModelAdmin, third parties' included (django-q2's,
        axes', auth's, DRF's), with `ListaProtegida` mixed in: the same
        subclassing Django's own `register` does when given options."""
        classe = admin_class or admin.ModelAdmin
        if not issubclass(classe, ListaProtegida):
            classe = type(
                classe.__name__,
                (ListaProtegida, classe),
                {"__module__": classe.__module__, "__qualname__": classe.__qualname__},
            )
        super().register(model_or_iterable, classe, **options)

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


class ConsultaRecusada(BadRequest):
    """A list's query that Django or the database refuses; its text names the
    parameters (`SiteDeSuporte.admin_view` answers it as a 400)."""


# What compiling or running a list's lookups raises for a value Django let
# through when it built the filter: `id__range=1` (IndexError at compile time),
# `criado_em__year=99999` (ValueError, a year past datetime's), `nome__regex=[`
# (DataError from PostgreSQL: an invalid regular expression), a text pk's
# `id__range=1,2,3` (ProgrammingError from the driver: three values, two
# placeholders).
_RECUSAS = (
    DataError,
    FieldError,
    IndexError,
    OverflowError,
    ProgrammingError,
    TypeError,
    ValidationError,
    ValueError,
)


class ListaProtegida(admin.ModelAdmin):
    """Every changelist: a lookup that Django or the database refuses is a 400
    naming it, never a 500, and never Django's redirect to `?e=1` (a "database
    error" page).

    Django validates a lookup's value when it builds the filter, but some it
    only refuses when the SQL is compiled, and the database when it runs it;
    both used to happen while the template rendered the page. Here the page's
    rows are read inside the guard, in a savepoint (so a refused statement
    leaves an enclosing transaction usable), and the template reads them from
    the queryset's cache: a page view runs the same queries as before (an
    action's POST reads the page's rows once more).
    """

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        try:
            with transaction.atomic(using=router.db_for_read(self.model)):
                lista = super().get_changelist_instance(request)
                len(lista.result_list)
        except IncorrectLookupParameters as erro:
            raise ConsultaRecusada(_recusa(request, erro.__cause__ or erro)) from erro
        except _RECUSAS as erro:
            if not _filtros(request):
                raise  # no lookup to blame: a bug, and a 500 says so
            raise ConsultaRecusada(_recusa(request, erro)) from erro
        return lista

    def response_action(self, request: HttpRequest, queryset: QuerySet) -> Any:
        # The selected rows are a `pk__in` lookup Django builds unguarded.
        chave = self.model._meta.pk
        assert chave is not None
        for valor in request.POST.getlist(ACTION_CHECKBOX_NAME):
            try:
                chave.to_python(valor)
            except ValidationError:
                raise ConsultaRecusada(
                    f"seleção inválida ({ACTION_CHECKBOX_NAME}): {valor[:40]!r} não "
                    f"é um id de {self.model._meta.verbose_name}"
                ) from None
        return super().response_action(request, queryset)


def _recusada(texto: str) -> HttpResponse:
    # Plain text: the reason quotes what the query string said.
    return HttpResponseBadRequest(texto, content_type="text/plain; charset=utf-8")


def _filtros(request: HttpRequest) -> list[str]:
    """The list's lookup parameters (those Django does not use for itself)."""
    return [
        nome
        for nome in request.GET
        if nome not in IGNORED_PARAMS and nome not in (PAGE_VAR, ERROR_FLAG)
    ]


def _recusa(request: HttpRequest, erro: BaseException) -> str:
    nomes = _filtros(request) or [n for n in request.GET if n != ERROR_FLAG]
    motivo = (str(erro).strip().splitlines() or [type(erro).__name__])[0][:200]
    return f"filtro recusado ({', '.join(nomes)}): {motivo}"


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
