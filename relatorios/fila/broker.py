"""The queue: django-q2's ORM broker, first in first out, with delayed messages.

django-q2's ORM broker takes any ready row (no ORDER BY): once deleted rows'
space is reused, a message written later can be taken first, and one tenant's
new message could jump ahead of another's. The tenant fairness of `jobs.vagas`
(at most a few messages per tenant in the queue) relies on FIFO, so the order
is explicit here: by the time a message became ready (`lock`), then by id.

A delayed message is a row whose `lock` is in the future: the broker only
hands out rows whose lock has passed, so a retry waiting for its backoff lives
in the database and survives any restart.

Who holds a message. The guarded update that takes a message also renames its
`key` to `<queue>@<cluster id>` (relatorio_clusters.id): in the same statement,
so the hot path costs no extra round trip. A taken message is invisible until
its `lock` (now + Q_CLUSTER retry, ~12 min), as with django-q2; it also names
its holder, and when that cluster is declared dead or stops
(`clusters.declarar_mortos`, `clusters.encerrar`) the messages it held,
prefetched but never started, are handed back at once instead of after the
lost-message sweep or the retry. The ack deletes by id, as before. A process
that is no cluster of ours (no id set) takes messages without renaming them,
exactly as django-q2 does.

django-q2's broker contract holds for a renamed message too (its own
test_brokers.py runs against both brokers here, with a cluster id set:
tests/fila/test_broker.py): the queue is the messages named after it, waiting
or held (`da_fila`). So a held message not acknowledged within `retry` is
delivered again, to any cluster, even while its holder lives (django-q2's
answer to a message lost inside a live cluster; the job's guarded claim makes
a second delivery of a running or finished job a no-op); `lock_size` counts
it; `purge_queue` deletes it.
"""

from __future__ import annotations

import multiprocessing
from datetime import datetime
from time import sleep
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ

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

    def da_fila(self) -> QuerySet[OrmQ]:
        """This queue's messages: waiting or delayed (`key` is the queue's
        name) and held by a cluster (`<queue>@<cluster id>`)."""
        return self.get_connection().filter(
            Q(key=self.list_key) | Q(key__startswith=f"{self.list_key}@")
        )

    def queue_size(self) -> int:
        return self.da_fila().filter(lock__lte=timezone.now()).count()

    def lock_size(self) -> int:
        return self.da_fila().filter(lock__gt=timezone.now()).count()

    def purge_queue(self) -> Any:
        return self.da_fila().delete()

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        # A held message whose lock passed is due again (its `retry`).
        prontas = (
            self.da_fila()
            .filter(lock__lt=timezone.now())
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
    """Writes its message invisible until `quando` (used per call, not
    configured; django-q2's constructor, so its broker tests can build it)."""

    def __init__(
        self, list_key: str | None = None, *, quando: datetime | None = None
    ) -> None:
        super().__init__(list_key=list_key or Conf.CLUSTER_NAME)
        self.quando = quando

    def enqueue(self, task: Any) -> int:
        mensagem = self.get_connection().create(
            key=self.list_key, payload=task, lock=self.quando or timezone.now()
        )
        return int(mensagem.pk)
