"""Settings for relatorios: every knob is an environment variable with a default.

The README's configuration table lists each variable; keep the two in step.
"""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.arranque import CHAVE_DE_DESENVOLVIMENTO
from config.logs import acesso_ligado
from config.logs import configuracao as configuracao_de_logs

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(nome: str, padrao: str) -> str:
    return os.environ.get(nome, padrao)


def env_int(nome: str, padrao: int) -> int:
    valor = os.environ.get(nome)
    if valor is None or valor.strip() == "":
        return padrao
    return int(valor)


def env_float(nome: str, padrao: float) -> float:
    valor = os.environ.get(nome)
    if valor is None or valor.strip() == "":
        return padrao
    return float(valor)


def env_bool(nome: str, padrao: bool) -> bool:
    valor = os.environ.get(nome)
    if valor is None or valor.strip() == "":
        return padrao
    return valor.strip().lower() in {"1", "true", "yes", "on", "sim"}


_SIM = {"1", "true", "yes", "on", "sim"}
_NAO = {"0", "false", "no", "off", "nao", "não"}


def env_sim_ou_nao(nome: str, padrao: bool) -> bool:
    """A switch that refuses what it cannot read: `RELATORIOS_X=ture` stops
    the start with a message instead of silently meaning "off"."""
    valor = os.environ.get(nome)
    if valor is None or valor.strip() == "":
        return padrao
    texto = valor.strip().lower()
    if texto not in _SIM | _NAO:
        raise ImproperlyConfigured(
            f"{nome}={valor!r} is not a switch: use true or false (1/0, on/off)"
        )
    return texto in _SIM


def env_list(nome: str, padrao: list[str]) -> list[str]:
    valor = os.environ.get(nome)
    if valor is None:
        return padrao
    return [item.strip() for item in valor.split(",") if item.strip()]


# --- Django core -------------------------------------------------------------

DEBUG = env_bool("DJANGO_DEBUG", False)
# With DEBUG off the web and the cluster refuse this default (config/arranque.py):
# `make` targets and the tests set their own key explicitly.
SECRET_KEY = env_str("DJANGO_SECRET_KEY", CHAVE_DE_DESENVOLVIMENTO)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    # Django's admin with our site class (landing numbers, no tenant users).
    "relatorios.apps.AdminDeSuporteConfig",
    "django.contrib.auth",
    # Login lockout on /entrar/ and /admin/login/ (AXES_* below).
    "axes",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    # OpenAPI 3 of the API (relatorios/api/esquema/) and its Swagger UI and
    # Redoc pages, whose assets come from the sidecar's static files (no CDN).
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Before django_q: its `qcluster` command is extended here (sweep, graceful stop).
    "relatorios",
    "django_q",
]

# One list. The browser's middlewares are named through relatorios/api/cadeia.py,
# where each is the real one stepping aside for an API call that authenticates
# by token (DRF decides those by the token alone): a new middleware runs for
# every request unless it is named there too.
MIDDLEWARE = [
    # django-prometheus' responses by status and view, and latency by view,
    # first so every answer and every middleware's time is counted; only
    # those two of its series (relatorios/metricas.py says why).
    "relatorios.operacao.metricas.MetricasHttp",
    "django.middleware.security.SecurityMiddleware",
    # X-Request-ID in (validated or made), out, and on every log line.
    "relatorios.operacao.logs.RequestIdMiddleware",
    # Refuses an oversized body from its Content-Length, before anything reads
    # it (the API's JSON parser reads the stream itself, past Django's limit).
    "relatorios.api.entrada.LimiteDoCorpo",
    # Refuses a NUL or a lone surrogate in a query string or a form field
    # (the same rule the API's JSON parser applies to bodies).
    "relatorios.api.entrada.TextoImpossivel",
    # Serves the collected static files from the web server itself (no CDN, no nginx).
    "relatorios.api.cadeia.WhiteNoiseMiddleware",
    "relatorios.api.cadeia.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "relatorios.api.cadeia.CsrfViewMiddleware",
    "relatorios.api.cadeia.AuthenticationMiddleware",
    # A signed-in user's pages: private, no-store (relatorios/operacao/cabecalhos.py).
    "relatorios.api.cadeia.SemCacheComUsuario",
    "relatorios.api.cadeia.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Content-Security-Policy on every page (CONTENT_SECURITY_POLICY below).
    "relatorios.api.cadeia.CSPMiddleware",
    # The connection lost under a request: 503, not 500; a deadlock victim that
    # got past the domain's retries: a 409 page (the API answers it in JSON
    # itself: relatorios/api/erros.py).
    "relatorios.operacao.conexao.ErrosDoBanco",
    # Last, as django-axes requires: answers a locked-out login with its page.
    "relatorios.api.cadeia.AxesMiddleware",
]

# Django's CSRF deploy check and django-axes' check look for their middleware
# by its exact name; MIDDLEWARE names both through relatorios/api/cadeia.py
# (subclasses left out of the API's chain). relatorios.W009 replaces them: it
# looks for the class.
SILENCED_SYSTEM_CHECKS = ["security.W003", "axes.W002"]

# django-axes first: it refuses a locked-out login before the password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The web server and the cluster keep connections open between requests and
# tasks and check them before reuse. Django's psycopg pool is deliberately not
# used: django-q2 forks its workers, and pooled sockets do not survive a fork.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/relatorios"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
# The same backend with a health check that needs no round trip while the
# connection's socket is quiet, on top of django-prometheus' wrapper that
# counts and times statements (relatorios/banco/base.py).
DATABASES["default"]["ENGINE"] = "relatorios.banco"

# A PostgreSQL streaming replica of the primary, for the reports' own SQL
# (relatorios/banco/replica.py; docs/implantacao.md, "A read replica"). Unset:
# everything runs on the one database. Job state, the queue, heartbeats and
# results always stay on the primary.
RELATORIOS_REPLICA_URL = env_str("RELATORIOS_REPLICA_URL", "")
# How long an attempt waits for the replica to replay what the primary had
# when the attempt started, before it reads on the primary instead.
RELATORIOS_REPLICA_ESPERA_S = env_float("RELATORIOS_REPLICA_ESPERA_S", 5.0)
if RELATORIOS_REPLICA_URL:
    DATABASES["replica"] = dj_database_url.parse(
        RELATORIOS_REPLICA_URL,
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
    DATABASES["replica"]["ENGINE"] = "relatorios.banco"
    # libpq's options for the replica's connections (a URL's own ?name= wins).
    # connect_timeout: the longest a new connection may take; the freshness
    # probe lowers it to what is left of its own deadline
    # (RELATORIOS_REPLICA_ESPERA_S, relatorios/banco/replica.py), and that
    # deadline, not these, bounds a replica that accepts and then says nothing.
    # Keepalives and tcp_user_timeout notice a replica host that vanished
    # (powered off, cut off the network) under a report that was already
    # reading there: probes from 5 s of silence, every 2 s, and unacknowledged
    # data given up after 10 s, instead of the kernel's 2 h of idle and 15 min
    # of retransmissions. The report's attempt then fails as transient and is
    # retried, on the primary while the replica stays away.
    _opcoes_da_replica = DATABASES["replica"].setdefault("OPTIONS", {})
    for _opcao, _valor in (
        ("connect_timeout", 5),
        ("keepalives", 1),
        ("keepalives_idle", 5),
        ("keepalives_interval", 2),
        ("keepalives_count", 3),
        ("tcp_user_timeout", 10_000),
    ):
        _opcoes_da_replica.setdefault(_opcao, _valor)
    # Django's test runner must not create a test database on a read-only
    # standby: under tests the alias is the primary's test database.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
    DATABASE_ROUTERS = ["relatorios.banco.replica.Roteador"]
# Server-side prepared statements, off by default and on in the web workers
# (config/servidor.py). psycopg prepares a statement once it has run
# DB_PREPARE_THRESHOLD times on a connection, and PostgreSQL then skips
# parsing and planning it; this needs server-side binding (Django's default
# client-side cursors never prepare). Measured (docs/historico/benchmarks.md, B1): a
# third to a half less PostgreSQL CPU per submit and status request. Not
# everywhere, because server-side binding and plan caching hurt the other
# processes' big statements: gerar_dados's bulk INSERT ... SELECT took 65 s
# instead of 27 s for 1M sales (its array parameters are no longer literals),
# and a report's chunk query under a generic plan 10.5 s instead of 6.8 s.
# A statement lives on its connection: fine with django-q2 (it closes
# connections before forking) and without a pooler; a transaction-mode
# pgbouncer older than 1.21 would break it. -1: off. Not 0: a statement
# prepared on its first run cannot hold several commands, and some
# migrations send several at once.
#
# DB_PLAN_CACHE_MODE is PostgreSQL's plan_cache_mode when statements are
# prepared: custom plans (made with the values) unless told otherwise; the
# web workers ask for `auto`, whose generic plans suit lookups by key.
_PREPARAR = env_int("DB_PREPARE_THRESHOLD", -1)
if _PREPARAR == 0:
    raise ImproperlyConfigured("DB_PREPARE_THRESHOLD must be -1 (off) or >= 1")
if _PREPARAR > 0:
    DATABASES["default"]["OPTIONS"] = {
        "server_side_binding": True,
        "prepare_threshold": _PREPARAR,
        "options": "-c plan_cache_mode="
        + env_str("DB_PLAN_CACHE_MODE", "force_custom_plan"),
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "relatorios.Usuario"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "pt-br"
# Our corrections to Django's pt_BR catalogue (month names in lower case).
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# Hashed names (cache them forever) and pre-compressed copies; whitenoise serves
# them. The manifest only exists after `collectstatic` (`make run` runs it).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# The largest request body accepted (API and pages): a report request or a
# schedule is well under 1 KiB; above this a request gets 413 before its body
# is read. Django's own form limit follows it.
RELATORIOS_CORPO_MAX_BYTES = env_int("RELATORIOS_CORPO_MAX_BYTES", 256 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = RELATORIOS_CORPO_MAX_BYTES

LOGIN_URL = "/entrar/"
LOGIN_REDIRECT_URL = "/painel/"
LOGOUT_REDIRECT_URL = "/entrar/"

# --- Deployment behind a TLS proxy (README, "Deploy checklist") -----------------

# Off by default so `make run` and the tests speak plain HTTP on 127.0.0.1; the
# checklist turns each on, and `manage.py check --deploy` is then clean.
# Only behind a proxy that sets X-Forwarded-Proto itself (and drops a client's).
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https")
    if env_bool("DJANGO_SECURE_PROXY_SSL_HEADER", False)
    else None
)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool(
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False
)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# Content-Security-Policy (django-csp) on every page, the admin's included:
# scripts, styles, images and fonts from our own static files only, nothing
# inline (the pages' script and styles are files; a page's data reaches its
# script as JSON in a non-executable <script type="application/json">), no
# plugins, no <base>, no framing, forms post only to us. An injected <script>
# or style attribute is refused by the browser even if escaping ever failed.
# The API docs pages relax it for themselves only (config/urls.py). The
# JSON API is no page (application/json, nosniff): its answers carry none,
# the same through the browser's middleware chain and the token calls' one.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/relatorios/"],
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        # Django's admin draws some icons as data: SVG.
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}

# --- Who the client is; what a browser may load (security round 2) ---------------

# The proxies in front (comma-separated networks, e.g. 127.0.0.1/32 for one on
# this host): X-Forwarded-For is believed only from a peer inside them, read
# from the right past every entry that is one of them too; anyone else's
# address is its socket's (relatorios/operacao/acesso.py). Empty: no proxy,
# the header is ignored. The login lockout, /metrics and the access log all
# read the client's address there.
RELATORIOS_PROXIES_CONFIAVEIS = env_list("RELATORIOS_PROXIES_CONFIAVEIS", [])
for _rede in RELATORIOS_PROXIES_CONFIAVEIS:
    try:
        ipaddress.ip_network(_rede, strict=False)
    except ValueError as _erro:
        raise ImproperlyConfigured(
            f"RELATORIOS_PROXIES_CONFIAVEIS: {_rede!r} is not a network ({_erro})"
        ) from None
# Its predecessor counted proxies and believed whatever sat at that position,
# also from a client that skipped the proxy. Refused rather than ignored: a
# deployment that set it is behind a proxy and needs the list above.
if env_int("RELATORIOS_PROXIES_A_FRENTE", 0):
    raise ImproperlyConfigured(
        "RELATORIOS_PROXIES_A_FRENTE is gone: list the proxies' networks in "
        "RELATORIOS_PROXIES_CONFIAVEIS instead (docs/implantacao.md)"
    )

# --- Login lockout (django-axes) ------------------------------------------------

# After RELATORIOS_LOGIN_FALHAS wrong passwords for one username from one
# address, that pair is refused (429, templates/registration/bloqueado.html)
# for RELATORIOS_LOGIN_ESPERA_MIN minutes; a success resets the count. By
# username and address together: a guesser cannot lock a manager out from
# elsewhere, nor spray one password over many users unseen (each pair counts).
AXES_ENABLED = env_bool("RELATORIOS_LOGIN_BLOQUEIO", True)
AXES_FAILURE_LIMIT = env_int("RELATORIOS_LOGIN_FALHAS", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("RELATORIOS_LOGIN_ESPERA_MIN", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/bloqueado.html"
AXES_CLIENT_IP_CALLABLE = "relatorios.operacao.acesso.ip_do_cliente"
# Failed attempts are what the lockout needs; a row per successful login is not.
AXES_DISABLE_ACCESS_LOG = True

# --- REST API ----------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # DRF's TokenAuthentication plus a short per-process cache of
        # token -> user (RELATORIOS_CACHE_TOKEN_S below).
        "relatorios.api.autenticacao.TokenComCache",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "relatorios.api.permissoes.UsuarioDeTenant",
    ],
    # Strict UTF-8 JSON, bounded: hostile bodies are 400s (relatorios/api/entrada.py).
    "DEFAULT_PARSER_CLASSES": ["relatorios.api.entrada.JSONEstrito"],
    # DRF's JSONRenderer with its encoder built once (relatorios/api/negociacao.py).
    "DEFAULT_RENDERER_CLASSES": ["relatorios.api.negociacao.JSONDeSaida"],
    # DRF's choice, remembered per Accept header (relatorios/api/negociacao.py).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": (
        "relatorios.api.negociacao.NegociacaoMemorizada"
    ),
    "EXCEPTION_HANDLER": "relatorios.api.erros.tratar_excecao",
    "UNAUTHENTICATED_USER": None,
    # One UPSERT per request on an unlogged table (relatorios/api/limites.py).
    "DEFAULT_THROTTLE_CLASSES": ["relatorios.api.limites.LimitePorToken"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# The OpenAPI document (/api/schema/, docs/openapi.yaml); what it says per
# operation is declared in relatorios/api/esquema/.
SPECTACULAR_SETTINGS = {
    "TITLE": "relatorios",
    "DESCRIPTION": (
        "Relatórios do ERP gerados em segundo plano, por tenant. Envie "
        "`Authorization: Token <chave>` em todo pedido. Todo erro é JSON "
        '`{"erro": ..., "campo": ...}`: também 404 para caminhos desconhecidos '
        "sob `/relatorios/`, 405 com `Allow` para um método que a URL não "
        "atende e 413 para um corpo acima do limite. Os caminhos aceitam "
        "também uma barra final, sem redirecionamento."
    ),
    "VERSION": "1",
    # The schema describes the API, not itself.
    "SERVE_INCLUDE_SCHEMA": False,
    # Anyone may read the contract and the docs pages (they hold no data).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Swagger UI and Redoc from drf-spectacular-sidecar's static files.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "PREPROCESSING_HOOKS": ["relatorios.api.esquema.so_a_api"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "relatorios.api.esquema.acrescentar_links",
        "relatorios.api.esquema.limites_configurados",
        # The event streams: async views of the events process, no DRF view.
        "relatorios.api.esquema.eventos.acrescentar_eventos",
    ],
    # Ids are bigint: the `job` converter's digits, 1 .. 2^63-1.
    "PATH_CONVERTER_OVERRIDES": {
        "job": {"type": "integer", "format": "int64", "minimum": 1},
    },
    # `status` has a different choice set in each job shape.
    "ENUM_NAME_OVERRIDES": {
        "StatusEmAndamentoEnum": "relatorios.api.esquema.STATUS_EM_ANDAMENTO",
        "StatusProntoEnum": "relatorios.api.esquema.STATUS_PRONTO",
        "StatusFalhouEnum": "relatorios.api.esquema.STATUS_FALHOU",
    },
}

# Per token: at most this many API requests per window, then 429 with
# Retry-After until the window ends. 0 turns the limit off.
RELATORIOS_API_LIMITE = env_int("RELATORIOS_API_LIMITE", 600)
RELATORIOS_API_JANELA_S = env_int("RELATORIOS_API_JANELA_S", 60)

# How long a process trusts a token it has already checked: a deleted token
# or deactivated user stops working within this many seconds. 0: no cache.
RELATORIOS_CACHE_TOKEN_S = env_float("RELATORIOS_CACHE_TOKEN_S", 5.0)

# --- Report jobs ---------------------------------------------------------------

# How long a finished result is served before a new request recomputes it.
RELATORIOS_VALIDADE_S = env_int("RELATORIOS_VALIDADE_S", 24 * 3600)
# How often a running job proves it is alive (a thread with its own connection).
# Its old name, RELATORIOS_HEARTBEAT_S, is still read, so a deployment that
# set it keeps its interval after the rename to the project's one word.
RELATORIOS_BATIMENTO_S = env_float(
    "RELATORIOS_BATIMENTO_S", env_float("RELATORIOS_HEARTBEAT_S", 10.0)
)
# Default limit on a report's SQL (statement_timeout); a type may override it.
RELATORIOS_TIMEOUT_S = env_int("RELATORIOS_TIMEOUT_S", 300)
# Longest period (inicio..fim) a request may ask for.
RELATORIOS_PERIODO_MAX_ANOS = env_int("RELATORIOS_PERIODO_MAX_ANOS", 5)
# A running job whose heartbeat is older than this is an orphan: its worker died.
RELATORIOS_ORFAO_APOS_S = env_int("RELATORIOS_ORFAO_APOS_S", 60)
# How often each cluster sweeps for orphans, due retries and lost messages.
RELATORIOS_VARREDURA_S = env_float("RELATORIOS_VARREDURA_S", 30.0)
# Attempts before a job that keeps failing for transient reasons gives up.
RELATORIOS_MAX_TENTATIVAS = env_int("RELATORIOS_MAX_TENTATIVAS", 3)
# Retry delay: base * 2^(attempt-1), plus up to 100% jitter, capped.
RELATORIOS_BACKOFF_S = env_float("RELATORIOS_BACKOFF_S", 5.0)
RELATORIOS_BACKOFF_MAX_S = env_float("RELATORIOS_BACKOFF_MAX_S", 300.0)
# A pending job whose queue message is this old and no longer in the queue is
# given a new one (a wiped or lost queue must not strand jobs).
RELATORIOS_REENFILEIRAR_APOS_S = env_int("RELATORIOS_REENFILEIRAR_APOS_S", 120)
# Per tenant: running at once, and waiting (new requests beyond it get 429).
RELATORIOS_MAX_EXECUTANDO_POR_TENANT = env_int(
    "RELATORIOS_MAX_EXECUTANDO_POR_TENANT", 2
)
RELATORIOS_MAX_PENDENTES_POR_TENANT = env_int("RELATORIOS_MAX_PENDENTES_POR_TENANT", 20)
# The admin's "pendente há muito tempo": a pending job older than this.
RELATORIOS_PENDENTE_ANTIGO_S = env_int("RELATORIOS_PENDENTE_ANTIGO_S", 600)
# Retry-After of a 429.
RELATORIOS_RETRY_AFTER_429_S = env_int("RELATORIOS_RETRY_AFTER_429_S", 10)
# On SIGTERM a cluster stops taking jobs; running ones get this long to
# finish, then are handed back to pendente at once for another cluster.
RELATORIOS_DESLIGAMENTO_S = env_float("RELATORIOS_DESLIGAMENTO_S", 20.0)
# django-q2 kills a worker this long after its job's own time budget.
RELATORIOS_MARGEM_HARD_STOP_S = env_int("RELATORIOS_MARGEM_HARD_STOP_S", 30)
# --- Computing ahead (relatorios/jobs/antecipacao.py, docs/operacao.md) --------

# Reports a tenant asks on a pattern (yesterday's sales every morning, last
# week every Monday, the previous month on the first working day) are
# computed before they are asked, in idle capacity. Off: no pass runs.
RELATORIOS_ANTECIPAR = env_sim_ou_nao("RELATORIOS_ANTECIPAR", True)
# How often each cluster runs the pass (each report is submitted once a day
# whatever the number of clusters: the submit's dedup by chave).
RELATORIOS_ANTECIPAR_S = env_float("RELATORIOS_ANTECIPAR_S", 300.0)
# How long before the earliest time of day a pattern was asked at its
# report is submitted; 86400: as soon as its day starts.
RELATORIOS_ANTECIPAR_ANTECEDENCIA_S = env_int(
    "RELATORIOS_ANTECIPAR_ANTECEDENCIA_S", 3600
)
# Jobs computed ahead running at once, in all (they only ever run while no
# person's job waits in the queue).
RELATORIOS_ANTECIPAR_MAX_EXECUTANDO = env_int("RELATORIOS_ANTECIPAR_MAX_EXECUTANDO", 1)
# A pattern whose results computed ahead were asked for less often than this
# (share, over the last 28 days, with at least 3 settled) stops being
# computed ahead until those results age out of the window.
RELATORIOS_ANTECIPAR_PRECISAO_MINIMA = env_float(
    "RELATORIOS_ANTECIPAR_PRECISAO_MINIMA", 0.5
)
if RELATORIOS_ANTECIPAR_S <= 0:
    raise ImproperlyConfigured("RELATORIOS_ANTECIPAR_S must be > 0 (seconds)")
if not 0 <= RELATORIOS_ANTECIPAR_ANTECEDENCIA_S <= 86400:
    raise ImproperlyConfigured(
        "RELATORIOS_ANTECIPAR_ANTECEDENCIA_S must be between 0 and 86400 (seconds)"
    )
if RELATORIOS_ANTECIPAR_MAX_EXECUTANDO < 1:
    raise ImproperlyConfigured(
        "RELATORIOS_ANTECIPAR_MAX_EXECUTANDO must be >= 1 "
        "(turn computing ahead off with RELATORIOS_ANTECIPAR=0)"
    )
if not 0 <= RELATORIOS_ANTECIPAR_PRECISAO_MINIMA <= 1:
    raise ImproperlyConfigured(
        "RELATORIOS_ANTECIPAR_PRECISAO_MINIMA must be between 0 and 1"
    )

# Extra report types (dotted paths to TipoRelatorio subclasses), e.g. for tests.
RELATORIOS_TIPOS_EXTRAS = env_list("RELATORIOS_TIPOS_EXTRAS", [])
# Report chunks computed once and reused by later jobs while the ERP rows they
# read are unchanged (relatorios/jobs/reuso.py; docs/arquitetura.md). Off:
# every chunk is computed, as before (the reuse tests and bench compare both).
RELATORIOS_REUSO_PARTES = env_bool("RELATORIOS_REUSO_PARTES", True)
if os.environ.get("RELATORIOS_REUSO_PARTES", "").strip().lower() not in {
    *("", "1", "true", "yes", "on", "sim"),
    *("0", "false", "no", "off", "nao", "não"),
}:
    raise ImproperlyConfigured(
        "RELATORIOS_REUSO_PARTES must be on or off (1/0, true/false), not "
        f"{os.environ['RELATORIOS_REUSO_PARTES']!r}"
    )
# Per tenant: bytes of stored chunks kept; past it the least recently used go.
# 0 stores nothing (reuse is then off in effect).
try:
    RELATORIOS_REUSO_ORCAMENTO_BYTES = env_int(
        "RELATORIOS_REUSO_ORCAMENTO_BYTES", 64 * 1024 * 1024
    )
except ValueError:
    RELATORIOS_REUSO_ORCAMENTO_BYTES = -1
if RELATORIOS_REUSO_ORCAMENTO_BYTES < 0:
    raise ImproperlyConfigured(
        "RELATORIOS_REUSO_ORCAMENTO_BYTES must be >= 0 (bytes of stored report "
        f"chunks per tenant), not {os.environ['RELATORIOS_REUSO_ORCAMENTO_BYTES']!r}"
    )
# --- Schedules and absence alerts ---------------------------------------------------

# A planned firing found later than this (no cluster was running) is "missed":
# the schedule's catch-up policy decides whether it still runs.
RELATORIOS_DISPARO_TOLERANCIA_S = env_int("RELATORIOS_DISPARO_TOLERANCIA_S", 300)
# Allow a sixth cron field (seconds): for tests and demos, never needed by a report.
RELATORIOS_CRON_SEGUNDOS = env_bool("RELATORIOS_CRON_SEGUNDOS", False)
# How often each cluster fires due schedules and runs the absence checker.
RELATORIOS_AGENDADOR_S = env_float("RELATORIOS_AGENDADOR_S", 5.0)
# A new schedule's cron may not fire twice within this many minutes (checked
# on its next firings, agendamentos.agenda.verificar_intervalo); 0 turns the
# check off (tests with seconds crons). Existing schedules keep their cron.
RELATORIOS_INTERVALO_MINIMO_MIN = env_int("RELATORIOS_INTERVALO_MINIMO_MIN", 15)
# Per tenant: schedules not deleted (paused ones count: resuming needs no
# slot), and webhooks; creating one more is a 409.
RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT = env_int(
    "RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT", 100
)
RELATORIOS_MAX_WEBHOOKS_POR_TENANT = env_int("RELATORIOS_MAX_WEBHOOKS_POR_TENANT", 10)
# Emails one schedule tells when its alert opens (400 naming destinatarios).
RELATORIOS_MAX_DESTINATARIOS = env_int("RELATORIOS_MAX_DESTINATARIOS", 20)

# --- Live events (Server-Sent Events; relatorios/eventos/, config/asgi.py) -----------

# How long published events stay in relatorio_eventos: a client reconnecting
# with a Last-Event-ID older than this gets a `lacuna` event (the job stream:
# the job's current state) instead of what it missed.
RELATORIOS_EVENTOS_RETENCAO_S = env_int("RELATORIOS_EVENTOS_RETENCAO_S", 3600)
# A heartbeat comment on every stream (proxies keep quiet connections), this often.
RELATORIOS_EVENTOS_BATIMENTO_S = env_float("RELATORIOS_EVENTOS_BATIMENTO_S", 15.0)
# Each events process reads relatorio_eventos for new events this often: at
# most this much added to an event's way to its streams, one indexed read per
# interval and process.
RELATORIOS_EVENTOS_INTERVALO_S = env_float("RELATORIOS_EVENTOS_INTERVALO_S", 0.025)
# How long the reader waits for a missing id below a visible one (a commit
# still finishing, which takes milliseconds) before it takes it for a
# rollback and moves on; the events after it wait that long too.
RELATORIOS_EVENTOS_ESPERA_LACUNA_S = env_float(
    "RELATORIOS_EVENTOS_ESPERA_LACUNA_S", 2.0
)
# The `retry:` a stream announces: how long a client waits to reconnect.
RELATORIOS_EVENTOS_RETRY_S = env_float("RELATORIOS_EVENTOS_RETRY_S", 3.0)
# Open streams per user (a token is one user) and per events process; past
# either a new one gets 429 with Retry-After.
RELATORIOS_EVENTOS_MAX_POR_TOKEN = env_int("RELATORIOS_EVENTOS_MAX_POR_TOKEN", 20)
RELATORIOS_EVENTOS_MAX_POR_PROCESSO = env_int(
    "RELATORIOS_EVENTOS_MAX_POR_PROCESSO", 10_000
)
# A tenant's share of those: its many users cannot take the whole process.
RELATORIOS_EVENTOS_MAX_POR_TENANT = env_int("RELATORIOS_EVENTOS_MAX_POR_TENANT", 1000)
# An open stream's credential (token or session, the user active, in its
# tenant, its password unchanged) is checked again this often: a revoked one
# ends within it (docs/api.md promises 5 s: at most 5). And a stream ends
# after this long anyway; EventSource reconnects and authenticates again.
RELATORIOS_EVENTOS_REVISAO_S = env_float("RELATORIOS_EVENTOS_REVISAO_S", 2.0)
RELATORIOS_EVENTOS_VIDA_MAX_S = env_float("RELATORIOS_EVENTOS_VIDA_MAX_S", 3600.0)
# The events process waits this long for any one database read (a stream's
# authentication and first frames, its reader's reads): past it, a stream
# being opened gets 503 with Retry-After, and the reader connects again.
RELATORIOS_EVENTOS_ESPERA_BANCO_S = env_float("RELATORIOS_EVENTOS_ESPERA_BANCO_S", 5.0)

# The operations dashboard (/admin/painel/) is reused this long per web
# process, and built by one request at a time there; 0: built on every open.
RELATORIOS_PAINEL_CACHE_S = env_float("RELATORIOS_PAINEL_CACHE_S", 10.0)

# The chunks a running job has finished, combined, in its status
# (`resultado_parcial`) and on its page as they complete (docs/api.md). Off:
# a running job's status is only its progress, as before issue 34.
RELATORIOS_RESULTADO_PARCIAL = env_sim_ou_nao("RELATORIOS_RESULTADO_PARCIAL", True)

# --- Retention ---------------------------------------------------------------------

# Finished jobs are deleted (with their attempts, partial rows and django-q2
# task records) this many days after their result expired; failed ones this
# many days after they failed (relatorios/jobs/retencao.py).
RELATORIOS_RETER_DIAS = env_int("RELATORIOS_RETER_DIAS", 30)
# How often each cluster runs that retention (bounded batches, SKIP LOCKED).
RELATORIOS_EXPURGO_S = env_float("RELATORIOS_EXPURGO_S", 300.0)

# Worker processes per cluster.
RELATORIOS_WORKERS = env_int("RELATORIOS_WORKERS", 2)
# How often a cluster proves it is alive (relatorio_clusters.batimento_em), from
# a thread of its main process; well below RELATORIOS_ORFAO_APOS_S, after which
# a silent cluster is declared dead and its queue messages are handed back.
RELATORIOS_CLUSTER_BATIMENTO_S = env_float("RELATORIOS_CLUSTER_BATIMENTO_S", 10.0)
# /readyz fails when no cluster's checker (alertas.verificar, every
# RELATORIOS_AGENDADOR_S in every cluster) ran within this many seconds; 0
# only reports the age.
RELATORIOS_VERIFICADOR_MAX_S = env_float("RELATORIOS_VERIFICADOR_MAX_S", 60.0)
# The version a cluster records (relatorio_clusters.versao); empty: pyproject's.
RELATORIOS_VERSAO = env_str("RELATORIOS_VERSAO", "")

# --- Metrics (relatorios/operacao/metricas.py) ----------------------------------

# Who may read /metrics (and a cluster's metrics port) without a token:
# comma-separated networks, e.g. 10.0.0.0/8. Anyone else gets 403.
RELATORIOS_METRICAS_REDES = env_list(
    "RELATORIOS_METRICAS_REDES", ["127.0.0.0/8", "::1/128"]
)
# A bearer token that also grants access (Authorization: Bearer <token>),
# for a Prometheus outside those networks; empty: no token accepted.
RELATORIOS_METRICAS_TOKEN = env_str("RELATORIOS_METRICAS_TOKEN", "")
# A cluster host has no web server: its qcluster serves its own metrics on
# this port (0: off), on this address.
RELATORIOS_METRICAS_PORTA = env_int("RELATORIOS_METRICAS_PORTA", 0)
RELATORIOS_METRICAS_ENDERECO = env_str("RELATORIOS_METRICAS_ENDERECO", "127.0.0.1")
# django-prometheus' per-statement metrics (django_db_execute_total, query
# durations): about 40 µs of CPU per statement, so off by default; connection
# counts are always on (relatorios/banco/base.py).
RELATORIOS_METRICAS_SQL = env_bool("RELATORIOS_METRICAS_SQL", False)

# --- Notifications (relatorios/notificacoes/) -----------------------------------

# Absolute base of links in notifications (status URL, job page), e.g.
# https://relatorios.example.com; empty: paths only.
RELATORIOS_URL_BASE = env_str("RELATORIOS_URL_BASE", "").rstrip("/")
# Timeout of each socket operation of one webhook or chat POST (connect,
# each read), in seconds; the whole POST ends within twice this
# (notificacoes/canais/http.py).
RELATORIOS_WEBHOOK_TIMEOUT_S = env_float("RELATORIOS_WEBHOOK_TIMEOUT_S", 5.0)
# Development and tests only: also accept http:// URLs and loopback addresses
# (127.0.0.1, localhost). Off, webhooks must be https:// to public addresses.
RELATORIOS_WEBHOOK_PERMITIR_LOCAL = env_bool("RELATORIOS_WEBHOOK_PERMITIR_LOCAL", False)
# Ports a webhook URL may name (comma-separated). Only HTTPS's by default: a
# webhook is a POST to a web server, and any other port is how a URL reaches
# a Redis, an SMTP relay or an admin console that happens to be public.
# A PEM bundle of CAs trusted for endpoints besides the system's (an
# endpoint behind a private CA); empty: the system's only.
RELATORIOS_WEBHOOK_CA_ARQUIVO = env_str("RELATORIOS_WEBHOOK_CA_ARQUIVO", "")
RELATORIOS_WEBHOOK_PORTAS = [
    int(porta) for porta in env_list("RELATORIOS_WEBHOOK_PORTAS", ["443"])
]
# Attempts of one delivery before it is `falhou`; the delay between them is
# base * 2^(n-1) * [1, 2), capped.
RELATORIOS_ENTREGA_MAX_TENTATIVAS = env_int("RELATORIOS_ENTREGA_MAX_TENTATIVAS", 8)
RELATORIOS_ENTREGA_BACKOFF_S = env_float("RELATORIOS_ENTREGA_BACKOFF_S", 30.0)
RELATORIOS_ENTREGA_BACKOFF_MAX_S = env_float("RELATORIOS_ENTREGA_BACKOFF_MAX_S", 3600.0)
# Support's addresses, copied on every absence alert (comma-separated).
RELATORIOS_EMAILS_SUPORTE = env_list("RELATORIOS_EMAILS_SUPORTE", [])
# A scheduled report's email carries its .xlsx up to this size; past it, the
# signed link alone (docs/agendamentos.md, "Delivery").
RELATORIOS_ENTREGA_ANEXO_MAX_BYTES = env_int(
    "RELATORIOS_ENTREGA_ANEXO_MAX_BYTES", 5 * 1024 * 1024
)
# How long a signed download link in a delivery works (notificacoes/links.py).
RELATORIOS_LINK_VALIDADE_DIAS = env_int("RELATORIOS_LINK_VALIDADE_DIAS", 7)
# A signed link opens at most this many times per window, and one client
# address at most that many links' downloads (429 with Retry-After).
RELATORIOS_DOWNLOAD_LIMITE_LINK = env_int("RELATORIOS_DOWNLOAD_LIMITE_LINK", 10)
RELATORIOS_DOWNLOAD_LIMITE_ENDERECO = env_int("RELATORIOS_DOWNLOAD_LIMITE_ENDERECO", 30)
RELATORIOS_DOWNLOAD_JANELA_S = env_int("RELATORIOS_DOWNLOAD_JANELA_S", 60)
# A tenant's work besides its reports (docs/operacao.md, "Fairness"): at
# most this many of its deliveries in flight at once (notificacoes/vagas.py),
# and at most this many emails in any 24 hours (support's own addresses
# aside); past it, an email delivery is `falhou` with the reason.
RELATORIOS_MAX_ENTREGAS_POR_TENANT = env_int("RELATORIOS_MAX_ENTREGAS_POR_TENANT", 1)
# Deliveries in flight across all tenants (notificacoes/vagas.py): kept below
# a cluster's workers, so a slow receiver (or several tenants' at once) never
# holds every worker and a report always finds one free.
RELATORIOS_MAX_ENTREGAS_EM_VOO = env_int(
    "RELATORIOS_MAX_ENTREGAS_EM_VOO", max(1, RELATORIOS_WORKERS - 1)
)
if not 1 <= RELATORIOS_MAX_ENTREGAS_EM_VOO <= max(1, RELATORIOS_WORKERS - 1):
    raise ImproperlyConfigured(
        f"RELATORIOS_MAX_ENTREGAS_EM_VOO={RELATORIOS_MAX_ENTREGAS_EM_VOO}: must be "
        f">= 1 and below RELATORIOS_WORKERS={RELATORIOS_WORKERS} (deliveries "
        "must leave a worker for the reports; 1 with a single worker)"
    )
RELATORIOS_MAX_EMAILS_POR_TENANT_DIA = env_int(
    "RELATORIOS_MAX_EMAILS_POR_TENANT_DIA", 2000
)
# A result's .xlsx is built once and stored (notificacoes/arquivos.py); over
# this many lines there is no workbook (the CSV carries it). A worker waits
# this long for a build of the same file already running; a download never
# waits: it is told to come back after this long (Retry-After).
RELATORIOS_XLSX_MAX_LINHAS = env_int("RELATORIOS_XLSX_MAX_LINHAS", 250_000)
RELATORIOS_ARQUIVO_ESPERA_S = env_float("RELATORIOS_ARQUIVO_ESPERA_S", 5.0)
# The time one delivery attempt may spend building its file (its lease).
RELATORIOS_ARQUIVO_GERACAO_MAX_S = env_int("RELATORIOS_ARQUIVO_GERACAO_MAX_S", 120)
# Past this many alerts opened for one tenant in one check pass, each
# recipient gets one email listing them instead of one email each.
RELATORIOS_ALERTAS_RESUMO_APOS = env_int("RELATORIOS_ALERTAS_RESUMO_APOS", 3)

# Django's email: the console by default (without the attachments' base64,
# config/console.py); SMTP when EMAIL_BACKEND says so.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "config.console.EmailNoConsole")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
# A stuck SMTP server must not hold a worker until the hard stop.
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
# The filebased backend's folder (tests read the messages there).
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(BASE_DIR / "test-output" / "emails"))
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "relatorios@localhost")

# --- django-q2 -----------------------------------------------------------------

# The hard stop kills a worker a little after the report's own SQL timeout, so
# that a slow query normally ends with a clear error from the statement timeout
# first. The broker re-delivers a message that was not acknowledged after
# `retry` seconds; it must exceed the hard stop plus the time a prefetched
# message can wait behind a running job (queue_limit == workers: at most one
# job's time), or a long job would be delivered twice.
Q_TIMEOUT_S = RELATORIOS_TIMEOUT_S + RELATORIOS_MARGEM_HARD_STOP_S
Q_CLUSTER = {
    "name": "relatorios",
    "orm": "default",
    # FIFO dequeue (django-q2's takes rows in any order); see relatorios/fila/broker.py.
    "broker_class": "relatorios.fila.broker.BrokerOrdenado",
    "workers": RELATORIOS_WORKERS,
    "timeout": Q_TIMEOUT_S,
    "retry": 2 * Q_TIMEOUT_S + 60,
    "queue_limit": RELATORIOS_WORKERS,
    "bulk": 1,
    "poll": env_float("Q_POLL_S", 0.2),
    "ack_failures": True,
    "max_attempts": 1,
    # relatorio_jobs is the record of every job; django-q2 keeps only failures
    # (hard stops), which spares its monitor a locked prune per task.
    "save_limit": env_int("Q_SAVE_LIMIT", -1),
    "catch_up": False,
    "recycle": 500,
    "label": "Fila (django-q2)",
}

# --- Logging -------------------------------------------------------------------

# JSON lines (LOG_FORMAT=json, default) or key=value (LOG_FORMAT=texto);
# the web's access log and granian's own lines too (config/logs.py).
LOGGING = configuracao_de_logs(acesso=acesso_ligado())
