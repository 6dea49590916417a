"""LOGGING for Django (settings.py) and for the web's master (servidor.py).

One dictConfig for both, so the web's access log, granian's own lines and
the application's share one format: JSON lines (LOG_FORMAT=json, the
default) or key=value (LOG_FORMAT=texto, what `make run` and the tests use).
No Django here: the web's master builds it before any settings exist.
"""

from __future__ import annotations

import os
from typing import Any

_FORMATO_TEXTO = "%(asctime)s %(levelname)s %(name)s pid=%(process)d %(message)s"


def acesso_ligado() -> bool:
    """The web's access log: WEB_ACCESSLOG `-` (the default) on, empty off.

    GUNICORN_ACCESSLOG, its name before granian, still works.
    """
    valor = os.environ.get("WEB_ACCESSLOG")
    if valor is None:
        valor = os.environ.get("GUNICORN_ACCESSLOG", "-")
    return bool(valor.strip())


def configuracao(*, acesso: bool = True) -> dict[str, Any]:
    """The dictConfig; `acesso` False silences the web's access log."""
    formato = os.environ.get("LOG_FORMAT", "json").strip().lower() or "json"
    if formato not in ("json", "texto"):
        raise ValueError("LOG_FORMAT must be json or texto")
    nivel = os.environ.get("LOG_LEVEL", "INFO")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            # python-json-logger: every `extra=` field becomes a key.
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "fmt": "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s",
                "rename_fields": {
                    "asctime": "ts",
                    "levelname": "nivel",
                    "name": "logger",
                    "process": "pid",
                    "message": "msg",
                },
            },
            "texto": {
                "()": "relatorios.operacao.logs.FormatadorChaveValor",
                "format": _FORMATO_TEXTO,
            },
        },
        "filters": {
            "request_id": {"()": "relatorios.operacao.logs.ComRequestId"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": formato,
                "filters": ["request_id"],
            },
        },
        "root": {"handlers": ["console"], "level": nivel},
        "loggers": {
            "django-q": {"level": os.environ.get("Q_LOG_LEVEL", "INFO")},
            # With DJANGO_DEBUG on, Django logs every SQL statement with its
            # parameters at DEBUG: token keys, password hashes, webhook
            # secrets. Never, whatever LOG_LEVEL says; pg_stat_statements and
            # RELATORIOS_METRICAS_SQL tell which statements run.
            "django.db.backends": {"level": "INFO"},
            # The web's access line (config/vigia.py): its fields are `extra=`.
            "relatorios.acesso": {
                "handlers": ["console"],
                "level": "INFO" if acesso else "WARNING",
                "propagate": False,
            },
        },
    }
