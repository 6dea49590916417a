"""gunicorn settings, env-driven: `gunicorn config.wsgi -c config/gunicorn.py`.

Sync workers by default, one per CPU plus one (docs/benchmarks.md, B1). With
threaded workers (gthread) a keep-alive connection stays with the worker that
accepted it, and one worker tends to accept most of them: measured on 2 CPUs,
2 workers x 4 threads often served everything from one GIL-bound process at
100% of one core while the other idled (about half the throughput of 3 sync
workers, S1 and S3). Sync workers take one request per connection, so the
kernel's accept spreads requests evenly; the CPU not spent in Python is the
database round trips, so one extra process covers them. Sync workers do not
keep connections alive and a slow client holds a worker: behind the internet,
put a buffering proxy in front, or set GUNICORN_THREADS > 1 (gthread).
"""

import os
import sys
from pathlib import Path
from typing import Any

# gunicorn loads this file by path: the project's root is not on sys.path yet.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gunicorn import glogging  # type: ignore[import-untyped]

from config.logs import configuracao as configuracao_de_logs

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS") or len(os.sched_getaffinity(0)) + 1)
threads = int(os.environ.get("GUNICORN_THREADS") or 1)
worker_class = "gthread" if threads > 1 else "sync"
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-") or None
# The master's lines and the access log in the application's format (JSON
# lines or key=value, config/logs.py); the workers apply the same LOGGING.
logconfig_dict = configuracao_de_logs(acesso=accesslog is not None)


class Registro(glogging.Logger):
    """gunicorn's logger, minus the access line's cost when the log is off.

    With a `logconfig_dict` gunicorn builds every request's access atoms even
    when `accesslog` is off, for a logger that then drops the line: about 4%
    of a status request's CPU (py-spy, B1 S3).
    """

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        if accesslog is not None:
            super().access(resp, req, environ, request_time)


logger_class = Registro
# The web's statements are lookups by key and small inserts, run thousands of
# times: prepared statements with generic plans suit them (B1: PostgreSQL CPU
# per status request 0.22 -> 0.11 ms, per dedup hit 0.50 -> 0.32 ms). They are
# set here, for the web workers only: settings.py explains why not elsewhere.
raw_env = [
    f"DB_PREPARE_THRESHOLD={os.environ.get('DB_PREPARE_THRESHOLD', '5')}",
    f"DB_PLAN_CACHE_MODE={os.environ.get('DB_PLAN_CACHE_MODE', 'auto')}",
]
timeout = 30
graceful_timeout = 20
# Recycle a worker after this many requests (plus up to 10% jitter, so the
# workers do not restart together): bounds what a slow leak can grow to.
# 0 turns it off.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS") or 10000)
max_requests_jitter = max_requests // 10
# Request line and headers: gunicorn answers 400 beyond these (the body's
# limit is RELATORIOS_CORPO_MAX_BYTES, checked by the app from Content-Length).
# gunicorn's defaults, stated here so the README's list can point at them.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190
# gunicorn 27's control socket lives at one fixed path per user: two servers on
# one machine (tests, benchmarks, make run) would fight over it. Not used here.
control_socket_disable = True


def on_starting(server: object) -> None:
    """Refuse to start a web that cannot serve (config/arranque.py).

    In the master, before any worker is forked: gunicorn prints the message
    and exits 1, instead of booting workers that answer 500 to every page.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.arranque import exigir_web

    exigir_web()
    # Metrics of every worker in one folder, emptied now (config/metricas_dir.py);
    # the workers inherit PROMETHEUS_MULTIPROC_DIR when they are forked.
    from config import metricas_dir

    pasta, privada = metricas_dir.preparar("web")
    _pasta_de_metricas[:] = [pasta] if privada else []


_pasta_de_metricas: list[Path] = []


def child_exit(server: object, worker: Any) -> None:
    """A worker exited: its live gauges leave the scrape (its counters stay)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: object) -> None:
    for pasta in _pasta_de_metricas:
        from config import metricas_dir

        metricas_dir.remover(pasta)
