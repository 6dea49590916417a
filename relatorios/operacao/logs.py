"""Log lines with their structured fields, and the request id that ties them.

Two formats of the same records (LOGGING in config/settings.py):
- JSON, one object per line, in production (python-json-logger): every
  `extra=` field is a key, so `evento`, `job_id`, `request_id` are queryable
  as they are by a log pipeline;
- key=value (`FormatadorChaveValor`), readable in a terminal: `make run`
  and the tests set LOG_FORMAT=texto.

The request id: `X-Request-ID` from the client or the proxy when it is a
plausible id (1-64 of [A-Za-z0-9._-]), else a new one; echoed in the
response, stored with the job it creates, and put on every log line of the
request and of the worker that runs the job (`ComRequestId`).
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

_CAMPOS_PADRAO = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}

CABECALHO = "X-Request-ID"
_VALIDO = re.compile(r"[A-Za-z0-9._-]{1,64}")

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_id", default=None
)


def request_id_atual() -> str | None:
    """The id of the request (or the job's request) this code runs for."""
    return _request_id.get()


def definir_request_id(valor: str | None) -> contextvars.Token[str | None]:
    return _request_id.set(valor)


def restaurar_request_id(token: contextvars.Token[str | None]) -> None:
    _request_id.reset(token)


def request_id_valido(valor: str | None) -> str:
    """The client's id if it is a plausible one, else a new one."""
    if valor and _VALIDO.fullmatch(valor):
        return valor
    return uuid.uuid4().hex


class ComRequestId(logging.Filter):
    """Puts the current request id on every record that has none of its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            atual = _request_id.get()
            if atual is not None:
                record.request_id = atual
        return True


class RequestIdMiddleware:
    """Reads or makes the request id, keeps it for the request, echoes it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        valor = request_id_valido(request.headers.get(CABECALHO))
        token = _request_id.set(valor)
        try:
            resposta = self.get_response(request)
        finally:
            _request_id.reset(token)
        resposta[CABECALHO] = valor
        return resposta


class FormatadorChaveValor(logging.Formatter):
    """`... job iniciado job_id=12 tenant_id=3 tipo=vendas`: greppable and parseable."""

    def format(self, record: logging.LogRecord) -> str:
        linha = super().format(record)
        extras = {
            chave: valor
            for chave, valor in vars(record).items()
            if chave not in _CAMPOS_PADRAO and not chave.startswith("_")
        }
        if extras:
            linha += " " + " ".join(f"{k}={v}" for k, v in sorted(extras.items()))
        return linha
