"""The queue: django-q2's ORM broker, first in first out, with delayed messages.

django-q2's ORM broker takes any ready row (no ORDER BY): once deleted rows'
space is reused, a message written later can be taken first, and one tenant's
new message could jump ahead of another's. The tenant fairness of `services`
(at most a few messages per tenant in the queue) relies on FIFO, so the order
is explicit here: by the time a message became ready (`lock`), then by id.

A delayed message is a row whose `lock` is in the future: the broker only
hands out rows whose lock has passed, so a retry waiting for its backoff lives
in the database and survives any restart.
"""

from __future__ import annotations

from datetime import datetime
from time import sleep
from typing import Any

from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf


class BrokerOrdenado(ORM):
    """ORM broker that dequeues in FIFO order (Q_CLUSTER['broker_class'])."""

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        prontas = (
            self.get_connection()
            .filter(key=self.list_key, lock__lt=timezone.now())
            .order_by("lock", "id")[0 : Conf.BULK]
        )
        tarefas = []
        for tarefa in prontas:
            # The same guarded update as django-q2's: another cluster may have
            # taken the row since our read.
            if (
                self.get_connection()
                .filter(id=tarefa.id, lock=tarefa.lock)
                .update(lock=self.timeout(tarefa))
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
