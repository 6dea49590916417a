"""The queue: django-q2's ORM broker, first in first out, with delayed messages.

django-q2's ORM broker takes any ready row (no ORDER BY): once deleted rows'
space is reused, a message written later can be taken first, and one tenant's
new message could jump ahead of another's. The tenant fairness of `services`
(at most a few messages per tenant in the queue) relies on FIFO, so the order
is explicit here: by the time a message became ready (`lock`), then by id.

A delayed message is a row whose `lock` is in the future: the broker only
hands out rows whose lock has passed, so a retry waiting for its backoff lives
in the database and survives any restart.

Who holds a message. The guarded update that takes a message also renames its
`key` to `<queue>@<cluster id>` (relatorio_clusters.id): in the same statement,
so the hot path costs no extra round trip. A taken message was invisible only
until its `lock` (now + Q_CLUSTER retry, ~12 min); now it also names its holder,
and when that cluster is declared dead (`clusters.declarar_mortos`) the
messages it held, prefetched but never started, are handed back at once
instead of after the lost-message sweep or the broker's retry. The ack deletes
by id, as before. A process that is no cluster of ours (no id set) takes
messages without renaming them, exactly as django-q2 does.
"""

from __future__ import annotations

import multiprocessing
from datetime import datetime
from time import sleep
from typing import Any

from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf

# The id of this process's cluster, shared with the processes django-q2 forks
# (pusher included) after `definir_cluster`: shared memory, so a cluster that
# registers again (declared dead by a peer) renames its pusher's takes too.
_cluster_id: Any = None


def definir_cluster(*, cluster_id: int) -> None:
    """Name the cluster whose pusher takes messages (call before forking)."""
    global _cluster_id
    if _cluster_id is None:
        # A raw 64-bit value: one aligned word, read without a lock.
        _cluster_id = multiprocessing.RawValue("q", 0)
    _cluster_id.value = cluster_id


def chave_do_cluster(*, fila: str, cluster_id: int) -> str:
    """The `key` of a message while the cluster `cluster_id` holds it."""
    return f"{fila}@{cluster_id}"


class BrokerOrdenado(ORM):
    """ORM broker that dequeues in FIFO order (Q_CLUSTER['broker_class'])."""

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        prontas = (
            self.get_connection()
            .filter(key=self.list_key, lock__lt=timezone.now())
            .order_by("lock", "id")[0 : Conf.BULK]
        )
        tomada: dict[str, Any] = {}
        cluster_id = 0 if _cluster_id is None else _cluster_id.value
        if cluster_id:
            tomada["key"] = chave_do_cluster(fila=self.list_key, cluster_id=cluster_id)
        tarefas = []
        for tarefa in prontas:
            # The same guarded update as django-q2's: another cluster may have
            # taken the row since our read.
            if (
                self.get_connection()
                .filter(id=tarefa.id, lock=tarefa.lock)
                .update(lock=self.timeout(tarefa), **tomada)
            ):
                tarefas.append((tarefa.pk, tarefa.payload))
        if tarefas:
            return tarefas
        sleep(Conf.POLL)
        return None


class BrokerComAtraso(BrokerOrdenado):
    """Writes its message invisible until `quando` (used per call, not configured)."""

    def __init__(self, quando: datetime) -> None:
        super().__init__(list_key=Conf.CLUSTER_NAME)
        self.quando = quando

    def enqueue(self, task: Any) -> int:
        mensagem = self.get_connection().create(
            key=self.list_key, payload=task, lock=self.quando
        )
        return int(mensagem.pk)
