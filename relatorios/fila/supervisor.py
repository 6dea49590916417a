"""A cluster's main process: django-q2's cluster plus what every cluster of
this project must also do (django-q2's own `Cluster` only forks and waits).

- periodic routines (`Rotina`), each on its own interval, a failure of one
  logged without delaying the others. Which routines run is the caller's
  list (`relatorios/management/commands/qcluster.py`): they belong to the
  packages above this one (the sweep, the schedules, the outbox...).
- a graceful stop: on SIGTERM/SIGINT the workers take no new job (SIGUSR2),
  running jobs get RELATORIOS_DESLIGAMENTO_S to finish, then are handed back
  to pendente at once (SIGUSR1) instead of waiting for the orphan timeout.
- liveness (`fila.clusters`): the cluster registers a row before it forks,
  beats in it from a thread every RELATORIOS_CLUSTER_BATIMENTO_S
  (`BatimentoDoCluster`) and marks it encerrado after a graceful stop;
- with a read replica, another thread looks at it as often and writes what
  it saw in the same row, for /metrics (`ObservadorDaReplica`);
- the cluster's own metrics server, when the caller gives one
  (`servir_metricas`), shut down with the rest.

`rodar` is the whole sequence, from registering to the last child's exit.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from django import db
from django.conf import settings

from relatorios.banco import replica
from relatorios.fila import broker, clusters

logger = logging.getLogger(__name__)


class Servidor(Protocol):
    """What the supervisor needs of a server it stops: a metrics server."""

    def shutdown(self) -> None: ...


def rodar(
    *,
    rotinas: Callable[[Supervisor], list[Rotina]],
    servir_metricas: Callable[[], Servidor | None] = lambda: None,
) -> None:
    """Run a cluster until it stops: register, fork django-q2's processes,
    supervise, mark the row encerrado."""
    from django_q.cluster import Cluster

    # Inherited through fork by the sentinel, pusher and monitor, which must
    # ignore them; the workers install their own handlers (jobs/execucao.py).
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    # Registered before forking: the pusher names the messages it takes
    # with this id from its very first dequeue (relatorios/fila/broker.py).
    cluster_id = clusters.registrar(**identidade())
    broker.definir_cluster(cluster_id=cluster_id)
    db.connections.close_all()
    cluster = Cluster()
    # Replaces the handlers Cluster() just installed: django-q2's calls
    # Event.set() from the handler, which hangs forever when the sentinel
    # was killed by the same signal (a SIGTERM to the whole group).
    supervisor = Supervisor(
        cluster,
        cluster_id=cluster_id,
        rotinas=rotinas,
        servir_metricas=servir_metricas,
    )
    try:
        cluster.start()
    except RuntimeError:
        supervisor.encerrar()
        if supervisor.parando_desde is None:
            raise
        return  # stopped while starting: the sentinel is gone already
    supervisor.iniciar_threads()
    supervisor.rodar()


def identidade() -> dict[str, Any]:
    """host, pid and version, as a cluster registers them."""
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "versao": clusters.versao_do_projeto(),
    }


@dataclass
class Rotina:
    """A piece of periodic work of the supervisor."""

    nome: str
    intervalo_s: float
    executar: Callable[[], object]
    proxima: float = 0.0  # time.monotonic() of the next run; 0: at once


class Supervisor:
    """The main process's loop: periodic routines while running, stop
    gracefully on a signal. `cluster_id` (this cluster's relatorio_clusters
    row) can change: a cluster declared dead by a peer registers again."""

    def __init__(
        self,
        cluster: Any,
        *,
        cluster_id: int,
        rotinas: Callable[[Supervisor], list[Rotina]],
        servir_metricas: Callable[[], Servidor | None] = lambda: None,
    ) -> None:
        self.cluster = cluster
        self.cluster_id = cluster_id
        self.parando_desde: float | None = None
        self.parada_pedida = False
        self.devolvidos = False
        self.batimento = BatimentoDoCluster(self)
        self.observador = ObservadorDaReplica(self) if replica.configurada() else None
        self._servir_metricas = servir_metricas
        self.servidor_de_metricas: Servidor | None = None
        self.rotinas = rotinas(self)
        signal.signal(signal.SIGTERM, self._ao_sinal)
        signal.signal(signal.SIGINT, self._ao_sinal)

    def iniciar_threads(self) -> None:
        """After the fork only: a thread's open connection must not be
        inherited by a child."""
        self.batimento.start()
        if self.observador is not None:
            self.observador.start()
        self.servidor_de_metricas = self._servir_metricas()

    def rodar(self) -> None:
        logger.info(
            "supervisor pronto",
            extra={
                "varredura_s": settings.RELATORIOS_VARREDURA_S,
                "cluster_id": self.cluster_id,
            },
        )
        try:
            self._laco()
        finally:
            self.encerrar()

    def encerrar(self) -> None:
        """Stop beating and mark the row encerrado (every child has exited)."""
        self.batimento.encerrar()
        if self.observador is not None:
            self.observador.encerrar()
        if self.servidor_de_metricas is not None:
            self.servidor_de_metricas.shutdown()
        try:
            db.close_old_connections()
            clusters.encerrar(cluster_id=self.cluster_id)
        except Exception:
            # Not fatal: the peers declare this cluster dead after the orphan
            # timeout and hand back what it held.
            logger.exception("encerramento do cluster falhou")
        db.connections.close_all()

    def _laco(self) -> None:
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
            if self.parando_desde is None:
                self._executar_rotinas(agora)
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

    def _executar_rotinas(self, agora: float) -> None:
        for rotina in self.rotinas:
            if agora < rotina.proxima:
                continue
            # From the start of this run: a slow routine does not drift, and
            # one that overran runs again at the next turn of the loop.
            rotina.proxima = agora + rotina.intervalo_s
            try:
                db.close_old_connections()
                rotina.executar()
            except Exception:
                # A routine that fails (database away) is simply tried again
                # next time; the others run meanwhile.
                logger.exception("rotina falhou", extra={"rotina": rotina.nome})
                db.connections.close_all()

    def _ao_sinal(self, signum: int, frame: FrameType | None) -> None:
        if self.parando_desde is not None:
            return
        self.parando_desde = time.monotonic()
        logger.info("cluster parando", extra={"sinal": signum})
        sinalizar_descendentes(signal.SIGUSR2)


class EmThread(threading.Thread):
    """Periodic work of the main process that neither waits behind the
    routines nor makes them wait: at once, then every
    RELATORIOS_CLUSTER_BATIMENTO_S, on the thread's own connections. A step
    that fails is logged and tried again at the next tick."""

    nome = ""
    falha = ""  # the log line of a failed step
    # Whether stopping waits for a step under way to end.
    aguardar_ao_encerrar = True

    def __init__(self, supervisor: Supervisor) -> None:
        super().__init__(name=self.nome, daemon=True)
        self.supervisor = supervisor
        self._parar = threading.Event()

    def run(self) -> None:
        try:
            intervalo = 0.0
            while not self._parar.wait(intervalo):
                intervalo = settings.RELATORIOS_CLUSTER_BATIMENTO_S
                try:
                    self.passo()
                except Exception:
                    logger.warning(self.falha, exc_info=True)
                    db.connections.close_all()
        finally:
            db.connections.close_all()

    def passo(self) -> None:
        raise NotImplementedError

    def encerrar(self) -> None:
        self._parar.set()
        if self.aguardar_ao_encerrar and self.is_alive():
            self.join(timeout=10)


class BatimentoDoCluster(EmThread):
    """Beats in relatorio_clusters on its own connection.

    A thread, not a routine: a routine that runs long (a slow sweep, a webhook
    delivery) must not look like a dead cluster. At once first: the row's beat
    dates from before the fork, and starting the cluster's processes can take
    seconds. A failed beat is retried on the next; if the database stays away,
    the peers decide. If the row was declared dead meanwhile (this process was
    frozen or cut off for longer than the orphan timeout), its messages were
    handed back: the cluster registers again and its pusher names new takes
    with the new id.
    """

    nome = "batimento-do-cluster"
    falha = "batimento do cluster falhou"
    # A beat after the row is marked encerrado would register the cluster again.
    aguardar_ao_encerrar = True

    def passo(self) -> None:
        anterior = self.supervisor.cluster_id
        if clusters.bater(cluster_id=anterior):
            return
        novo = clusters.registrar(**identidade())
        broker.definir_cluster(cluster_id=novo)
        self.supervisor.cluster_id = novo
        logger.warning(
            "cluster declarado morto por outro: registrado de novo",
            extra={"cluster_id": novo, "cluster_anterior": anterior},
        )


class ObservadorDaReplica(EmThread):
    """Looks at the read replica (`replica.estado`, under the probe's deadline)
    and writes what it saw in this cluster's row, which /metrics reports: a
    scrape never waits on the replica. Its own thread: a silent replica costs
    each look the deadline, which neither the beat nor the routines wait for.
    """

    nome = "observador-da-replica"
    falha = "observação da réplica falhou"
    # A look under way may wait for the deadline; a late write is harmless.
    aguardar_ao_encerrar = False

    def passo(self) -> None:
        estado = replica.estado()
        if estado is not None:
            clusters.anotar_replica(
                cluster_id=self.supervisor.cluster_id, estado=estado
            )


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
