"""The production web server: granian (WSGI) with what it lacks added.

`python -m config.servidor` (Procfile, `make run`, the tests, the bench).

granian keeps connections alive and parses HTTP in Rust: measured at 15-35%
less CPU per request than gunicorn's sync workers (docs/benchmarks.md, "The
production server"). What a production server must also do and granian
2.8.9 does not is added here and in config/vigia.py:

- before any worker: refuse a web that cannot serve (config/arranque.py),
  empty the Prometheus multiprocess folder (config/metricas_dir.py), and set
  the web workers' prepared-statement settings (settings.py says why only
  there);
- a per-request timeout and recycling after N requests (config/vigia.py):
  the worker asks for its replacement through a pipe; this master starts the
  new worker, then stops the old one gracefully (granian's own path for
  SIGHUP reloads);
- a replaced or dead worker's live gauges leave the scrape.

Signals: SIGTERM/SIGINT stop accepting and drain in-flight requests for up
to WEB_GRACEFUL_TIMEOUT_S; SIGHUP replaces every worker gracefully (new code
is loaded: workers import the app after they start).

granian's internals used here (`MPServer._respawn_workers`,
`_handle_rss_signal`, `_watch_workers_rss`, `_stop_workers`) are private:
requirements.txt pins the exact version, and tests/config/test_servidor.py runs
every behaviour against real processes.
"""

from __future__ import annotations

import contextlib
import logging
import logging.config
import os
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from pathlib import Path
from typing import Any

from granian.constants import Interfaces
from granian.server.mp import MPServer

from config import metricas_dir, vigia
from config.logs import acesso_ligado
from config.logs import configuracao as configuracao_de_logs

logger = logging.getLogger("relatorios.servidor")

ALVO_PADRAO = "config.wsgi:application"
# granian stops the whole server when a worker dies within 5.5 s of being
# (re)spawned ("crash loop"): a timeout shorter than that could turn one
# slow request after a respawn into an outage.
TIMEOUT_MINIMO_S = 6


def _env(nome: str, antigo: str | None = None, padrao: str = "") -> str:
    """WEB_* settings; the GUNICORN_* names of before still work."""
    valor = os.environ.get(nome)
    if valor is None and antigo is not None:
        valor = os.environ.get(antigo)
    return padrao if valor is None else valor


# A worker's replacement imports Django again: ~1.5 s of CPU. At 10,000 (the
# old gunicorn setting) and B1's 1,500 req/s over three workers that was one
# re-import every ~7 s, 11% of S3's CPU samples (py-spy); at 100,000 it is one
# every couple of minutes per worker, still a bound on a slow leak.
MAX_PEDIDOS_PADRAO = 100_000


def workers_padrao() -> int:
    """One per CPU plus one. granian gives each worker its own SO_REUSEPORT
    socket and the kernel spreads connections by hash: with one worker per
    CPU, keep-alive clients often piled on one worker, GIL-bound at a full
    core while the other idled (B1, 2 CPUs: 3x2 served 8-34% more than 2x2
    on every scenario, docs/benchmarks.md)."""
    return len(os.sched_getaffinity(0)) + 1


@dataclass(frozen=True)
class Configuracao:
    host: str
    porta: int
    workers: int
    threads: int
    timeout_s: int
    graceful_timeout_s: int
    max_pedidos: int
    intervalo_s: float
    boot_timeout_s: float
    acesso: bool

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
        return cls(
            host=host.strip("[]") or "127.0.0.1",
            porta=int(porta),
            workers=int(_env("WEB_WORKERS", "GUNICORN_WORKERS") or workers_padrao()),
            threads=int(_env("WEB_THREADS", "GUNICORN_THREADS") or 2),
            timeout_s=timeout_s,
            graceful_timeout_s=int(_env("WEB_GRACEFUL_TIMEOUT_S", padrao="20")),
            max_pedidos=int(
                _env("WEB_MAX_REQUESTS", "GUNICORN_MAX_REQUESTS") or MAX_PEDIDOS_PADRAO
            ),
            intervalo_s=float(_env("WEB_RESPAWN_INTERVAL_S", padrao="0.5")),
            boot_timeout_s=float(_env("WEB_BOOT_TIMEOUT_S", padrao="60")),
            acesso=acesso_ligado(),
        )


# The pipe workers write to (their pid and what they say: ready, or "replace
# me"). Created in the master before any worker is forked; they inherit it.
_pipe: tuple[int, int] | None = None
PRONTO, RECICLAR = 1, 2
_MENSAGEM = struct.Struct("=ii")


def _avisar(tipo: int) -> None:
    if _pipe is not None:
        # Under PIPE_BUF: one atomic write, never interleaved with another worker's.
        os.write(_pipe[1], _MENSAGEM.pack(os.getpid(), tipo))


def carregar(alvo: str, conf: Configuracao) -> vigia.Vigia:
    """In each worker, after the fork: the app, wrapped, its watchdog running."""
    modulo, _, nome = alvo.partition(":")
    app = getattr(import_module(modulo), nome or "application")
    envolvida = vigia.Vigia(
        app,
        timeout_s=conf.timeout_s,
        max_pedidos=conf.max_pedidos,
        pedir_reciclagem=partial(_avisar, RECICLAR),
    )
    envolvida.iniciar()
    # granian binds and serves right after this returns.
    _avisar(PRONTO)
    return envolvida


class Servidor(MPServer):
    """granian's multi-process server, replacing workers that ask for it."""

    def __init__(self, alvo: str, conf: Configuracao, logs: dict[str, Any]) -> None:
        super().__init__(
            alvo,
            address=conf.host,
            port=conf.porta,
            interface=Interfaces.WSGI,
            workers=conf.workers,
            blocking_threads=conf.threads,
            log_dictconfig=logs,
            # The access log is config/vigia.py's: it has the response's
            # X-Request-ID, which granian's format cannot reach.
            log_access=False,
            respawn_failed_workers=True,
            respawn_interval=conf.intervalo_s,
            workers_kill_timeout=conf.graceful_timeout_s,
        )
        self.conf = conf
        self._a_reciclar: set[int] = set()
        self._prontos: set[int] = set()
        self._avisos = threading.Condition()

    def startup(self, spawn_target: Any, target_loader: Any) -> None:
        threading.Thread(
            target=self._ouvir_workers, name="relatorios-avisos", daemon=True
        ).start()
        super().startup(spawn_target, target_loader)

    def _ouvir_workers(self) -> None:
        assert _pipe is not None
        while True:
            pid, tipo = _MENSAGEM.unpack(os.read(_pipe[0], _MENSAGEM.size))
            with self._avisos:
                if tipo == PRONTO:
                    # Only current workers' pids: a worker respawned after a
                    # crash reports ready too, and nobody waits for it.
                    atuais = {wrk._id() for wrk in list(self.wrks)}
                    self._prontos = {p for p in self._prontos if p in atuais}
                    self._prontos.add(pid)
                    self._avisos.notify_all()
                    continue
                self._a_reciclar.add(pid)
            # granian's main loop wakes for its memory monitor on this flag
            # (unused here, see _watch_workers_rss): the replacement happens
            # in that loop, like every other respawn.
            self.rss_signal = True
            self.main_loop_interrupt.set()

    def _handle_rss_signal(self, spawn_target: Any, target_loader: Any) -> None:
        with self._avisos:
            pids, self._a_reciclar = self._a_reciclar, set()
        for wrk in list(self.wrks):
            if wrk._id() in pids and wrk.is_alive():
                logger.info(
                    "worker-%s atingiu o limite de pedidos: substituindo",
                    wrk.idx + 1,
                    extra={"evento": "reciclagem", "worker_pid": wrk._id()},
                )
                self._respawn_workers([wrk.idx], spawn_target, target_loader)

    def _watch_workers_rss(self) -> None:
        if self.workers_rss is not None:  # never set by this launcher
            super()._watch_workers_rss()

    def _respawn_workers(
        self,
        workers: Sequence[int],
        spawn_target: Any,
        target_loader: Any,
        delay: float = 0,
    ) -> None:
        """Replace workers one at a time; a live one only once its successor serves.

        granian's version sleeps a fixed `respawn_interval` between starting
        the new worker and stopping the old: on a busy host Django's import
        took longer than that, and with two workers replaced back to back
        no worker was listening for a moment (connections refused). Here the
        old worker keeps serving until the new one reports ready (or dies),
        and is told to drain first (`Connection: close` on its answers).
        """
        for idx in workers:
            velho = self.wrks[idx]
            vivo = velho.is_alive()
            if vivo:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(velho._id(), vigia.SINAL_DE_DRENAR)
            self.respawned_wrks[idx] = time.monotonic()
            logger.info("Respawning worker-%s", idx + 1)
            novo = self._spawn_worker(
                idx=idx, target=spawn_target, callback_loader=target_loader
            )
            novo.start()
            self.wrks[idx] = novo
            if vivo:
                self._esperar_pronto(novo)
                time.sleep(self.respawn_interval)
            velho.terminate()
            velho.join(self.workers_kill_timeout)
            # join() can return while a second waiter (granian's watcher
            # thread) reaps the child: is_alive() catches up a moment later.
            for _ in range(100):
                if not velho.is_alive():
                    break
                time.sleep(0.001)
            if velho.is_alive():
                logger.warning(
                    "worker-%s did not stop within %ss: killing it",
                    idx + 1,
                    self.workers_kill_timeout,
                )
                velho.kill()
                velho.join()
            _marcar_mortos([velho._id()])
            logger.info("Stopped old worker-%s", idx + 1)
        self._metrics.incr_spawn(len(workers))

    def _esperar_pronto(self, wrk: Any) -> None:
        limite = time.monotonic() + self.conf.boot_timeout_s
        with self._avisos:
            while (
                wrk._id() not in self._prontos
                and wrk.is_alive()
                and time.monotonic() < limite
            ):
                self._avisos.wait(0.1)
            self._prontos.discard(wrk._id())

    def _stop_workers(self) -> None:
        pids = [wrk._id() for wrk in self.wrks]
        super()._stop_workers()
        _marcar_mortos(pids)


def _marcar_mortos(pids: Any) -> None:
    """A worker exited: its live gauges leave the scrape (its counters stay)."""
    from prometheus_client import multiprocess

    for pid in pids:
        if pid is not None:
            multiprocess.mark_process_dead(pid)


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

    from config.arranque import exigir_web

    try:
        exigir_web()
    except RuntimeError as erro:
        logger.error("%s", erro)
        return 1
    pasta, privada = metricas_dir.preparar("web")
    global _pipe
    _pipe = os.pipe()
    vigia.instalar_sinal_de_drenar()
    carregador: Callable[[str], vigia.Vigia] = partial(carregar, conf=conf)
    try:
        Servidor(alvo, conf, logs).serve(target_loader=carregador)
    finally:
        if privada:
            metricas_dir.remover(pasta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
