"""django-q2's `qcluster`, plus what every cluster of this project must also do.

It replaces django_q's command of the same name (this app is listed first),
so no deployment can run a cluster without them:

- the sweep (`services.varrer`) every RELATORIOS_VARREDURA_S, from the
  cluster's main process. django-q2's scheduler only looks about every 30 s
  and per minute, too coarse; a loop in the cluster is restarted with it, and
  any number of copies is safe because every step is a guarded UPDATE.
- a graceful stop: on SIGTERM/SIGINT the workers take no new job (SIGUSR2),
  running jobs get RELATORIOS_DESLIGAMENTO_S to finish, then are handed back
  to pendente at once (SIGUSR1) instead of waiting for the orphan timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from django import db
from django.conf import settings
from django_q.management.commands.qcluster import Command as QclusterDoDjangoQ

from relatorios import services

logger = logging.getLogger(__name__)


class Command(QclusterDoDjangoQ):
    help = "Starts a django-q2 cluster with the orphan sweep and a graceful stop."

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("run_once"):
            super().handle(*args, **options)
            return
        from django_q.cluster import Cluster

        settings.SECRET_KEY  # noqa: B018 (signing needs it: fail before forking)
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        # Inherited through fork by the sentinel, pusher and monitor, which must
        # ignore them; the workers install their own handlers (execucao).
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        db.connections.close_all()
        cluster = Cluster()
        # Replaces the handlers Cluster() just installed: django-q2's calls
        # Event.set() from the handler, which hangs forever when the sentinel
        # was killed by the same signal (a SIGTERM to the whole group).
        supervisor = Supervisor(cluster)
        try:
            cluster.start()
        except RuntimeError:
            if supervisor.parando_desde is None:
                raise
            return  # stopped while starting: the sentinel is gone already
        supervisor.rodar()


class Supervisor:
    """The main process's loop: sweep while running, stop gracefully on a signal."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.parando_desde: float | None = None
        self.parada_pedida = False
        self.devolvidos = False
        signal.signal(signal.SIGTERM, self._ao_sinal)
        signal.signal(signal.SIGINT, self._ao_sinal)

    def rodar(self) -> None:
        logger.info(
            "supervisor pronto", extra={"varredura_s": settings.RELATORIOS_VARREDURA_S}
        )
        proxima_varredura = 0.0
        while self.cluster.sentinel.is_alive():
            agora = time.monotonic()
            if self.parando_desde is not None and not self.parada_pedida:
                # multiprocessing's Event.set() waits for the sleepers to wake
                # up; a sentinel killed by the same signal never does. From a
                # daemon thread, a stuck set() cannot keep this process alive.
                threading.Thread(
                    target=self.cluster.stop_event.set, daemon=True
                ).start()
                self.parada_pedida = True
            if self.parando_desde is None and agora >= proxima_varredura:
                self._varrer()
                proxima_varredura = agora + settings.RELATORIOS_VARREDURA_S
            if (
                self.parando_desde is not None
                and not self.devolvidos
                and agora - self.parando_desde >= settings.RELATORIOS_DESLIGAMENTO_S
            ):
                logger.info("prazo de desligamento esgotado: devolvendo jobs")
                sinalizar_descendentes(signal.SIGUSR1)
                self.devolvidos = True
            time.sleep(0.2)
        self.cluster.sentinel.join()
        db.connections.close_all()

    def _varrer(self) -> None:
        try:
            db.close_old_connections()
            services.varrer()
        except Exception:
            # A sweep that fails (database away) is simply tried again.
            logger.exception("varredura falhou")
            db.connections.close_all()

    def _ao_sinal(self, signum: int, frame: FrameType | None) -> None:
        if self.parando_desde is not None:
            return
        self.parando_desde = time.monotonic()
        logger.info("cluster parando", extra={"sinal": signum})
        sinalizar_descendentes(signal.SIGUSR2)


def sinalizar_descendentes(sinal: int) -> None:
    """Signal every process this one forked (sentinel, pusher, monitor, workers)."""
    for pid in _descendentes(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sinal)


def _descendentes(pid: int) -> list[int]:
    encontrados: list[int] = []
    pendentes = [pid]
    while pendentes:
        atual = pendentes.pop()
        for tarefa in Path(f"/proc/{atual}/task").glob("*"):
            try:
                filhos = [int(p) for p in (tarefa / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
            encontrados.extend(filhos)
            pendentes.extend(filhos)
    return encontrados
