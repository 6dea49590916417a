"""Who may read the metrics, and how they are served: the web's /metrics and a
cluster's own port (RELATORIOS_METRICAS_PORTA).

What is measured lives in `metricas` (the events and the database-backed
state); this module only exposes it. Who may scrape: `autorizado`
(RELATORIOS_METRICAS_REDES, RELATORIOS_METRICAS_TOKEN), the same rule on both
doors. Under prometheus_client's multiprocess mode a scrape sums every
process's file, and `esquecer_processos_mortos` drops the live gauges of
processes that exited.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from django import db
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import Metric
from prometheus_client.exposition import ThreadingWSGIServer

from relatorios.operacao import acesso
from relatorios.operacao.metricas import EstadoDoBanco

logger = logging.getLogger(__name__)


def multiprocesso() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


class _Exposicao:
    """This server's events (every process's, or this process's) plus the state."""

    def __init__(self) -> None:
        if multiprocesso():
            self.eventos: Any = CollectorRegistry()
            multiprocess.MultiProcessCollector(self.eventos)
        else:
            self.eventos = REGISTRY
        self.estado = EstadoDoBanco()

    def collect(self) -> Iterator[Metric]:
        yield from self.eventos.collect()
        yield from self.estado.collect()


def exposicao() -> bytes:
    """The scrape's body, in Prometheus' text format."""
    return generate_latest(_Exposicao())


def autorizado(*, cliente: acesso.Cliente, autorizacao: str) -> bool:
    """May this caller read the metrics? A bearer token equal to
    RELATORIOS_METRICAS_TOKEN (when set), or a client identified at an address
    inside one of RELATORIOS_METRICAS_REDES.

    Identified (`acesso.Cliente`): a proxy's own address is no scraper's, it
    stands for whoever the proxy relayed; behind a proxy on this host,
    127.0.0.1 is every outside client. So the proxy in front never counts as
    "local" (a scraper on its host uses the token), nor does a peer that says
    it forwarded the request but is not one of our proxies.
    """
    token = settings.RELATORIOS_METRICAS_TOKEN
    esquema, _, credencial = autorizacao.partition(" ")
    if (
        token
        and esquema.lower() == "bearer"
        and hmac.compare_digest(credencial.strip().encode(), token.encode())
    ):
        return True
    return cliente.identificado and acesso.dentro(
        cliente.endereco, settings.RELATORIOS_METRICAS_REDES
    )


@never_cache
@require_GET
def exportar(request: HttpRequest) -> HttpResponse:
    """GET /metrics, for Prometheus; 403 unless `autorizado`."""
    if not autorizado(
        cliente=acesso.cliente(request.META),
        autorizacao=request.headers.get("Authorization", ""),
    ):
        return HttpResponse(
            "proibido\n", status=403, content_type="text/plain; charset=utf-8"
        )
    return HttpResponse(exposicao(), content_type=CONTENT_TYPE_LATEST)


# --- A cluster's own port ------------------------------------------------------------


def _app_do_cluster(
    environ: dict[str, Any], responder: Callable[..., Any]
) -> Iterable[bytes]:
    try:
        if environ.get("PATH_INFO", "/") not in ("/", "/metrics"):
            responder("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        if not autorizado(
            cliente=acesso.cliente(environ),
            autorizacao=environ.get("HTTP_AUTHORIZATION", ""),
        ):
            responder("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"proibido\n"]
        corpo = exposicao()
        responder("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
        return [corpo]
    finally:
        # A thread per scrape: its database connection goes with it.
        db.connections.close_all()


class _SemLinhaDeAcesso(WSGIRequestHandler):
    """No stderr line per scrape (what prometheus_client's own server does)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def servir_no_cluster(*, porta: int, endereco: str) -> ThreadingWSGIServer:
    """Serve this cluster's metrics (all its processes, plus the state) on
    `endereco:porta`, from a daemon thread of the supervisor."""
    servidor = make_server(
        endereco,
        porta,
        _app_do_cluster,
        ThreadingWSGIServer,
        handler_class=_SemLinhaDeAcesso,
    )
    threading.Thread(
        target=servidor.serve_forever, name="metricas", daemon=True
    ).start()
    logger.info(
        "métricas do cluster servidas",
        extra={"endereco": endereco, "porta": servidor.server_port},
    )
    return servidor


_ARQUIVO_DE_GAUGE_VIVO = re.compile(r"^gauge_live\w+_(\d+)\.db$")


def esquecer_processos_mortos() -> int:
    """mark_process_dead for every process of this server that has exited
    (django-q2 replaces workers without a hook of its own: the supervisor
    calls this periodically). Its counters stay; its live gauges go."""
    pasta = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not pasta:
        return 0
    mortos = set()
    for arquivo in Path(pasta).glob("gauge_live*.db"):
        encontrado = _ARQUIVO_DE_GAUGE_VIVO.match(arquivo.name)
        if encontrado and not _vivo(int(encontrado.group(1))):
            mortos.add(int(encontrado.group(1)))
    for pid in mortos:
        multiprocess.mark_process_dead(pid, pasta)
    return len(mortos)


def _vivo(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
