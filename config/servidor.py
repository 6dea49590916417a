"""The production web server: granian (WSGI), through its public API only.

`python -m config.servidor` (Procfile, `make run`, the tests, the bench).

granian keeps connections alive and parses HTTP in Rust: measured at 15-35%
less CPU per request than gunicorn's sync workers (docs/historico/benchmarks.md, "The
production server"). Its own options do the process management: worker
processes with threads, a respawn of a worker that dies, the graceful
replacement of workers by age (`workers_lifetime`) or memory
(`workers_max_rss`), successor first; SIGTERM/SIGINT stop accepting and
drain in-flight requests for up to WEB_GRACEFUL_TIMEOUT_S; SIGHUP replaces
every worker the same way (new code is loaded: workers import the app after
they start).

Added here, before any worker: refuse a web that cannot serve
(config/arranque.py), empty the Prometheus multiprocess folder
(config/metricas_dir.py), set the web workers' prepared-statement settings
(settings.py says why only there). Added through granian's hooks: SIGHUP
tells every worker to drain first, and dead workers' live gauges leave the
scrape. In each worker (config/vigia.py): the per-request timeout, draining
before a replacement, and the access line.
"""

from __future__ import annotations

import gc
import logging
import logging.config
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from pathlib import Path

from granian import Granian
from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings

from config import metricas_dir, vigia
from config.logs import acesso_ligado
from config.logs import configuracao as configuracao_de_logs

logger = logging.getLogger("relatorios.servidor")

ALVO_PADRAO = "config.wsgi:application"
# granian stops the whole server when a worker dies within 5.5 s of being
# (re)spawned ("crash loop"): a timeout shorter than that could turn one
# slow request after a respawn into an outage.
TIMEOUT_MINIMO_S = 6
# granian refuses a shorter workers_lifetime.
VIDA_MINIMA_S = 60
# A replacement re-imports Django (~1.5 s of CPU): once an hour per worker is
# nothing, and still bounds a slow leak (WEB_WORKER_MAX_RSS_MB bounds a fast
# one).
VIDA_PADRAO_S = 3600
# granian stops the old worker this long after starting its successor,
# without waiting for it to be ready: Django's import took 1-2 s on a busy
# host, and two workers replaced back to back sooner than that left no
# listener (refused connections, docs/historico/benchmarks.md).
INTERVALO_PADRAO_S = 5.0

# Settings of the launcher before granian's lifetime: ignored, with a warning.
OBSOLETAS = {
    "WEB_MAX_REQUESTS": "WEB_WORKER_LIFETIME_S / WEB_WORKER_MAX_RSS_MB",
    "GUNICORN_MAX_REQUESTS": "WEB_WORKER_LIFETIME_S / WEB_WORKER_MAX_RSS_MB",
    "WEB_BOOT_TIMEOUT_S": "WEB_RESPAWN_INTERVAL_S",
}


def _env(nome: str, antigo: str | None = None, padrao: str = "") -> str:
    """WEB_* settings; the GUNICORN_* names of before still work."""
    valor = os.environ.get(nome)
    if valor is None and antigo is not None:
        valor = os.environ.get(antigo)
    return padrao if valor is None else valor


def workers_padrao() -> int:
    """One per CPU plus one. granian gives each worker its own SO_REUSEPORT
    socket and the kernel spreads connections by hash: with one worker per
    CPU, keep-alive clients often piled on one worker, GIL-bound at a full
    core while the other idled (B1, 2 CPUs: 3x2 served 8-34% more than 2x2
    on every scenario, docs/historico/benchmarks.md)."""
    return len(os.sched_getaffinity(0)) + 1


@dataclass(frozen=True)
class Configuracao:
    host: str
    porta: int
    workers: int
    threads: int
    timeout_s: int
    graceful_timeout_s: int
    vida_s: int | None
    rss_mb: int | None
    intervalo_s: float
    acesso: bool
    # A connection that has not sent its request's headers by then (a byte
    # or none) is closed.
    cabecalho_s: float = 10.0

    @classmethod
    def do_ambiente(cls) -> Configuracao:
        host, _, porta = _env("WEB_BIND", "GUNICORN_BIND", "127.0.0.1:8000").rpartition(
            ":"
        )
        timeout_s = int(_env("WEB_TIMEOUT_S", padrao="30"))
        if timeout_s < TIMEOUT_MINIMO_S:
            raise ValueError(
                f"WEB_TIMEOUT_S must be at least {TIMEOUT_MINIMO_S} (granian treats a "
                "worker that dies sooner after a respawn as a crash loop and exits)"
            )
        vida_s = int(_env("WEB_WORKER_LIFETIME_S", padrao=str(VIDA_PADRAO_S)))
        if 0 < vida_s < VIDA_MINIMA_S:
            raise ValueError(
                f"WEB_WORKER_LIFETIME_S must be 0 (off) or at least {VIDA_MINIMA_S}"
                " (granian's minimum)"
            )
        rss_mb = int(_env("WEB_WORKER_MAX_RSS_MB", padrao="0"))
        cabecalho_s = float(_env("WEB_CABECALHO_S", padrao="10"))
        if cabecalho_s <= 0:
            raise ValueError("WEB_CABECALHO_S must be > 0")
        return cls(
            host=host.strip("[]") or "127.0.0.1",
            porta=int(porta),
            workers=int(_env("WEB_WORKERS", "GUNICORN_WORKERS") or workers_padrao()),
            threads=int(_env("WEB_THREADS", "GUNICORN_THREADS") or 2),
            timeout_s=timeout_s,
            graceful_timeout_s=int(_env("WEB_GRACEFUL_TIMEOUT_S", padrao="20")),
            vida_s=vida_s or None,
            rss_mb=rss_mb or None,
            intervalo_s=float(
                _env("WEB_RESPAWN_INTERVAL_S", padrao=str(INTERVALO_PADRAO_S))
            ),
            acesso=acesso_ligado(),
            cabecalho_s=cabecalho_s,
        )


def carregar(alvo: str, conf: Configuracao) -> vigia.Vigia:
    """In each worker, after the fork: the app, wrapped, its watchdog running."""
    # Now, not after the import: granian's lifetime counts from the spawn.
    nascimento = time.monotonic()
    modulo, _, nome = alvo.partition(":")
    app = getattr(import_module(modulo), nome or "application")
    envolvida = vigia.Vigia(
        app,
        timeout_s=conf.timeout_s,
        fim_da_vida=None if conf.vida_s is None else nascimento + conf.vida_s,
        rss_max=None if conf.rss_mb is None else conf.rss_mb * 1024 * 1024,
    )
    envolvida.iniciar()
    congelar_o_carregado()
    return envolvida


def congelar_o_carregado() -> None:
    """Move what the worker has loaded out of the collector's sight.

    A worker holds ~105,000 objects that live as long as it does (Django,
    DRF, the models, the URLconf), and every full collection walked them
    all: 50-70 ms with the GIL held on an idle machine, up to 157 ms under
    B1's load, once every ~20 s per worker, and every request of that worker
    waited (B1's p99 was 2-5x the peer's; docs/historico/benchmarks.md). Frozen, a
    full collection walks only what requests left behind (~3 ms).

    The URLconf (and with it every view, serializer and DRF class) is
    imported first, so it is frozen too instead of arriving with the first
    requests. Only objects that exist now are frozen: what a request creates
    is collected as before.
    """
    from django.apps import apps

    if apps.ready:
        from django.urls import get_resolver

        get_resolver().url_patterns  # noqa: B018 (imports the views)
    gc.collect()
    gc.freeze()


def drenar_os_workers() -> None:
    """granian's reload hook: it runs before SIGHUP replaces the workers
    (granian's workers are this process's multiprocessing children)."""
    for filho in multiprocessing.active_children():
        if filho.pid is not None:
            os.kill(filho.pid, vigia.SINAL_DE_DRENAR)


def esquecer_os_mortos(pasta: Path) -> None:
    """A worker exited: its live gauges leave the scrape (its counters stay)."""
    from prometheus_client import multiprocess

    for arquivo in pasta.glob("gauge_live*_*.db"):
        pid = int(arquivo.stem.rsplit("_", 1)[1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, str(pasta))


def _vigiar_os_mortos(pasta: Path) -> None:
    while True:
        time.sleep(5)
        try:
            esquecer_os_mortos(pasta)
        except OSError:
            logger.exception("esquecendo as métricas de workers mortos")


def main(argv: Sequence[str] | None = None) -> int:
    argumentos = list(sys.argv[1:] if argv is None else argv)
    alvo = argumentos[0] if argumentos else ALVO_PADRAO
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # The web's statements are lookups by key and small inserts, run
    # thousands of times: prepared statements with generic plans suit them
    # (B1: PostgreSQL CPU per status request 0.22 -> 0.11 ms, per dedup hit
    # 0.50 -> 0.32 ms). Set for this process and its workers only.
    os.environ.setdefault("DB_PREPARE_THRESHOLD", "5")
    os.environ.setdefault("DB_PLAN_CACHE_MODE", "auto")
    conf = Configuracao.do_ambiente()
    logs = configuracao_de_logs(acesso=conf.acesso)
    logging.config.dictConfig(logs)
    for antiga, nova in OBSOLETAS.items():
        if antiga in os.environ:
            logger.warning("%s is no longer used: see %s", antiga, nova)

    from config.arranque import exigir_web

    try:
        exigir_web()
    except RuntimeError as erro:
        logger.error("%s", erro)
        return 1
    pasta, privada = metricas_dir.preparar("web")
    vigia.instalar_sinal_de_drenar()
    servidor = Granian(
        alvo,
        address=conf.host,
        port=conf.porta,
        interface=Interfaces.WSGI,
        # HTTP/1.1 only (what the proxy speaks to us): in "auto", granian
        # waits for a connection's first bytes to tell the protocol, with no
        # deadline, so one that never sent a byte was held for good. The
        # header deadline then covers it.
        http=HTTPModes.http1,
        http1_settings=HTTP1Settings(header_read_timeout=int(conf.cabecalho_s * 1000)),
        workers=conf.workers,
        blocking_threads=conf.threads,
        log_dictconfig=logs,
        # The access log is config/vigia.py's: it has the response's
        # X-Request-ID, which granian's format cannot reach.
        log_access=False,
        respawn_failed_workers=True,
        respawn_interval=conf.intervalo_s,
        workers_lifetime=conf.vida_s,
        workers_max_rss=conf.rss_mb,
        workers_kill_timeout=conf.graceful_timeout_s,
    )
    servidor.on_reload(drenar_os_workers)
    threading.Thread(
        target=_vigiar_os_mortos, args=(pasta,), name="relatorios-mortos", daemon=True
    ).start()
    try:
        servidor.serve(target_loader=partial(carregar, conf=conf))
    finally:
        if privada:
            metricas_dir.remover(pasta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
