"""LOGGING for Django (settings.py) and for the web's master (servidor.py).

One dictConfig for both, so the web's access log, granian's own lines and
the application's share one format: JSON lines (LOG_FORMAT=json, the
default) or key=value (LOG_FORMAT=texto, what `make run` and the tests use).
No Django here: the web's master builds it before any settings exist.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

_FORMATO_TEXTO = "%(asctime)s %(levelname)s %(name)s pid=%(process)d %(message)s"

# A scheduled report's download link (relatorios/paginas/urls.py, `baixar`):
# the rest of its path is a 7-day bearer token (notificacoes/links.py), and
# docs/seguranca.md promises that no secret reaches the logs.
PREFIXO_DE_DOWNLOAD = "/baixar/"
_TOKEN_DE_DOWNLOAD = re.compile(r"/baixar/[^/?#\s'\"]+")


def caminho_para_o_log(caminho: str) -> str:
    """The text as a log line may show it: a download token becomes `***`."""
    if PREFIXO_DE_DOWNLOAD not in caminho:
        return caminho
    return _TOKEN_DE_DOWNLOAD.sub(f"{PREFIXO_DE_DOWNLOAD}***", caminho)


class SemTokenDeDownload(logging.Filter):
    """The lines other code writes with a request's path, and the request it
    attaches: Django's `Not Found: /baixar/...`, `Method Not Allowed (HEAD):
    ...` (a mail scanner checking a link), CSRF's `Forbidden (...): ...`;
    and every `extra=` field (a middleware's `caminho`), whatever its name.
    Our own lines (config/vigia.py) never carry the token in the first place."""

    def filter(self, record: logging.LogRecord) -> bool:
        for nome, valor in list(vars(record).items()):
            if isinstance(valor, str) and PREFIXO_DE_DOWNLOAD in valor:
                setattr(record, nome, caminho_para_o_log(valor))
        if isinstance(record.msg, str) and PREFIXO_DE_DOWNLOAD in record.msg:
            record.msg = caminho_para_o_log(record.msg)
        argumentos = record.args
        if isinstance(argumentos, tuple) and any(
            isinstance(a, str) and PREFIXO_DE_DOWNLOAD in a for a in argumentos
        ):
            record.args = tuple(
                caminho_para_o_log(a) if isinstance(a, str) else a for a in argumentos
            )
        pedido = getattr(record, "request", None)
        caminho = getattr(pedido, "path", None)
        if isinstance(caminho, str) and PREFIXO_DE_DOWNLOAD in caminho:
            # What a formatter would print of it (its repr), without the token.
            metodo = getattr(pedido, "method", "")
            record.request = (
                f"<{type(pedido).__name__}: {metodo} {caminho_para_o_log(caminho)!r}>"
            )
        return True


def acesso_ligado() -> bool:
    """The web's access log: WEB_ACCESSLOG `-` (the default) on, empty off.

    GUNICORN_ACCESSLOG, its name before granian, still works.
    """
    valor = os.environ.get("WEB_ACCESSLOG")
    if valor is None:
        valor = os.environ.get("GUNICORN_ACCESSLOG", "-")
    return bool(valor.strip())


class InicioDoAxesEmDebug(logging.Filter):
    """django-axes logs "AXES: BEGIN version ..." at INFO in every process
    that starts Django (each web worker, each cluster): noise at the top of
    `make run`. It is a DEBUG line here, shown only when LOG_LEVEL=DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("AXES: BEGIN"):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().getEffectiveLevel() <= logging.DEBUG


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
            "sem_token": {"()": "config.logs.SemTokenDeDownload"},
            "inicio_do_axes": {"()": "config.logs.InicioDoAxesEmDebug"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": formato,
                "filters": ["request_id", "sem_token"],
            },
        },
        "root": {"handlers": ["console"], "level": nivel},
        "loggers": {
            # Django's own defaults give `django` a plain console handler while
            # DEBUG is on (and mail_admins, with no ADMINS here, while it is
            # off): every django.* line came out twice, the second time
            # unformatted and unfiltered (a download token in a 405's path).
            # Its lines go to the root's handler only.
            "django": {"handlers": [], "level": "INFO"},
            "django-q": {"level": os.environ.get("Q_LOG_LEVEL", "INFO")},
            # With DJANGO_DEBUG on, Django logs every SQL statement with its
            # parameters at DEBUG: token keys, password hashes, webhook
            # secrets. Never, whatever LOG_LEVEL says; pg_stat_statements and
            # RELATORIOS_METRICAS_SQL tell which statements run.
            "django.db.backends": {"level": "INFO"},
            # django-axes' "AXES: BEGIN ..." banner, once per process at INFO.
            "axes.apps": {"filters": ["inicio_do_axes"]},
            # The web's access line (config/vigia.py): its fields are `extra=`.
            "relatorios.acesso": {
                "handlers": ["console"],
                "level": "INFO" if acesso else "WARNING",
                "propagate": False,
            },
        },
    }
