"""Queue messages: how our tasks are enqueued, found again, and retried.

Two tasks travel through django-q2 (`relatorios.tasks`, named by string in
every message, so those names never change): a job's run and a delivery's
send. Each message carries one id as its only argument. Everything that must
turn a message back into its id, enqueue one, notice one lost, or wait before
a retry does it here, once.

Only django-q2's public names are used: `async_task` enqueues, a broker
(`q_options["broker"]`) decides where a message goes, `SignedPackage` signs
the one payload built here (`pacote`, measured), `OrmQ.task` decodes.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signals import pre_enqueue
from django_q.signing import SignedPackage
from django_q.tasks import async_task

from relatorios.fila.broker import BrokerComAtraso

logger = logging.getLogger(__name__)

TAREFA_RELATORIO = "relatorios.tasks.executar_relatorio"
TAREFA_ENTREGA = "relatorios.tasks.entregar"


def enfileirar(
    tarefa: str, objeto_id: int, *, nome: str, timeout: int, quando: datetime | None
) -> None:
    """One message for `tarefa(objeto_id)`, due at `quando` (None: now).

    The ORM broker writes the message through the caller's connection: inside
    a transaction, it commits or rolls back with the row it is about.
    """
    opcoes: dict[str, Any] = {"timeout": timeout}
    if quando is not None:
        opcoes["broker"] = BrokerComAtraso(quando=quando)
    async_task(tarefa, objeto_id, task_name=nome, q_options=opcoes)


def pacote(tarefa: str, objeto_id: int, *, nome: str, timeout: int) -> str:
    """The signed payload `enfileirar` would write, for a writer that inserts
    the message row itself, in a statement of its own (`pedidos.submeter`).

    Built here rather than by `async_task` through a capturing broker, which
    was tried (issue 16): that is django-q2's public path, but it cost 129 µs
    per new submit against 69 µs here, 252 µs with the "Enqueued" INFO line it
    writes, and B2's new submit went from 2.38 to 2.70 ms of Python
    (docs/historico/benchmarks.md). Only public names of django-q2 are used: the same
    dict as `async_task(tarefa, objeto_id, task_name=nome,
    q_options={"timeout": timeout})`, signed by `SignedPackage` with the same
    key and salt, `pre_enqueue` sent. The dict's layout is django-q2's
    message format: tests/jobs/test_pedidos.py compares it, key by
    key and in order, with what `async_task` writes, so an upgrade that
    changes it fails there, and a real cluster runs it.
    """
    if Conf.SYNC:
        raise RuntimeError("Q_CLUSTER sync: enqueue through async_task instead")
    conteudo: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "name": nome,
        "func": tarefa,
        "args": (objeto_id,),
        "timeout": timeout,
    }
    if Conf.CACHED:
        conteudo["cached"] = Conf.CACHED
    if Conf.ACK_FAILURES:
        conteudo["ack_failure"] = Conf.ACK_FAILURES
    conteudo["kwargs"] = {}
    conteudo["started"] = timezone.now()
    pre_enqueue.send(sender="django_q", task=conteudo)
    return str(SignedPackage.dumps(conteudo))


def id_da_mensagem(mensagem: OrmQ, tarefa: str) -> int | None:
    """The id a message of `tarefa` carries, or None (another task, unreadable)."""
    try:
        conteudo = mensagem.task
    except Exception:
        return None
    if (
        isinstance(conteudo, dict)
        and conteudo.get("func") == tarefa
        and conteudo.get("args")
    ):
        return int(conteudo["args"][0])
    return None


def ids_na_fila(tarefa: str) -> set[int]:
    """Ids with a message of `tarefa` still waiting (not taken by a cluster).

    Messages are signed pickles, so they are read and decoded here; the queue
    holds at most a few per tenant (the jobs' slots), so this stays small.
    """
    return {
        objeto_id
        for mensagem in OrmQ.objects.filter(lock__lte=Now())
        if (objeto_id := id_da_mensagem(mensagem, tarefa)) is not None
    }


def reenfileirar_perdidas(
    *,
    tarefa: str,
    candidatas: list[int],
    reservar: str,
    limite_s: int,
    enfileirar_linhas: Callable[[list[tuple[Any, ...]]], None],
) -> list[tuple[Any, ...]]:
    """Give a new message to the `candidatas` whose message is gone.

    1. Candidates (rows the caller found waiting too long for their message)
       whose message still waits in the queue are left alone.
    2. For the rest, `reservar` (a guarded `UPDATE ... WHERE id = ANY(%s)
       ... RETURNING id, ...`, taking the ids and `limite_s`) moves their
       enqueue time: a concurrent sweep that got there first moved it already,
       so each row is re-enqueued once.
    3. `enfileirar_linhas` writes the messages for the rows returned, in the
       same transaction. A duplicate message is harmless: claims are guarded.
    """
    if not candidatas:
        return []
    presentes = ids_na_fila(tarefa)
    perdidas = [i for i in candidatas if i not in presentes]
    if not perdidas:
        return []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(reservar, [perdidas, limite_s])
        linhas = [tuple(linha) for linha in cursor.fetchall()]
        enfileirar_linhas(linhas)
    return linhas


def atraso(numero: int, *, base_s: float, teto_s: float) -> float:
    """Exponential backoff with jitter: base * 2^(n-1) * [1, 2), capped.

    Not "full jitter" ([0, 1) of the whole wait): a retry never comes
    sooner than the exponential base, and retries of jobs that failed
    together still spread over a window as wide as that base."""
    base = base_s * 2 ** max(0, numero - 1)
    return float(min(teto_s, base * (1 + random.random())))
