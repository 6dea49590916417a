"""Who watches the watcher: the clusters' own liveness (relatorio_clusters).

Every qcluster registers a row at start and beats in it (`bater`) from a
thread of its main process, every RELATORIOS_CLUSTER_BATIMENTO_S. A cluster
whose beat is older than RELATORIOS_ORFAO_APOS_S, not stopped gracefully, is
dead: any live cluster's sweep declares it so (`declarar_mortos`) and hands
back the queue messages it held.

Why messages need handing back. A cluster takes messages before it runs them:
its pusher holds one while the task queue is full, and the task queue holds up
to queue_limit more. A taken message stays hidden until the first of: its
acknowledgement; Q_CLUSTER retry (~12 min) passing, after which the broker
delivers it again to any cluster, as django-q2's contract says, whether its
holder lives or not (fila/broker.py); its holder declared dead or stopped,
when it is handed back at once (here). A job that was running when its
cluster died is recovered by the orphan sweep (its heartbeat stops), but a job
whose message was only prefetched has no heartbeat: without this module it
waits for the lost-message sweep (RELATORIOS_REENFILEIRAR_APOS_S, 120 s), and
the redelivery after retry later runs the stale copy for nothing.

The choice. The broker names the holder in the message itself (`key` becomes
`<queue>@<cluster id>` in the same UPDATE that takes it, fila/broker.py): no
extra round trip per message and no second table to keep in step with
django-q2's. Re-enqueueing "pending jobs taken and not started before the dead
cluster's last beat" was the alternative; it needs the job to say which cluster
took its message, i.e. a write per dequeue, and still leaves the stale message
behind. Here the held message itself goes back to the queue, or is deleted
when it is stale (see `_devolver_mensagens`), so a recovered job has exactly
one message again.

Bound: a cluster killed at time K beat last at most at K, is declared dead by
the first sweep after K + RELATORIOS_ORFAO_APOS_S, and its prefetched messages
are visible at once: delivered within one orphan timeout plus one sweep.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any, TypedDict

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Least, Now
from django_q.conf import Conf
from django_q.models import OrmQ

from relatorios.banco import replica
from relatorios.fila import mensagens
from relatorios.fila.broker import chave_do_cluster
from relatorios.models import Cluster, EstadoDoJob, RelatorioJob

logger = logging.getLogger(__name__)


class Saude(TypedDict):
    """The liveness figures /readyz serves (and metrics may export)."""

    # Seconds since the newest beat of a cluster not stopped nor declared dead.
    cluster_batimento_idade_s: float | None
    # Seconds since any cluster's checker (alertas.verificar) last ran.
    verificador_idade_s: float | None
    # Clusters not stopped nor dead that beat within the orphan timeout.
    clusters_vivos: int


def registrar(*, host: str, pid: int, versao: str) -> int:
    """Record a starting cluster; its id names the messages it will take."""
    cluster = Cluster.objects.create(host=host, pid=pid, versao=versao)
    logger.info(
        "cluster registrado",
        extra={"cluster_id": cluster.pk, "host": host, "pid": pid, "versao": versao},
    )
    return int(cluster.pk)


def bater(*, cluster_id: int) -> bool:
    """Prove the cluster is alive; False once it was stopped or declared dead
    (its messages were handed back: it must register again to take more)."""
    return (
        Cluster.objects.filter(
            pk=cluster_id, encerrado_em__isnull=True, morto_em__isnull=True
        ).update(batimento_em=Now())
        == 1
    )


def marcar_verificador(*, cluster_id: int) -> None:
    """Record that this cluster's checker of absence alerts finished a pass."""
    Cluster.objects.filter(pk=cluster_id).update(verificador_em=Now())


def encerrar(*, cluster_id: int) -> bool:
    """Mark a graceful stop, once every process of the cluster has exited, and
    hand back the messages it still held (a prefetched message can outlive the
    workers' shutdown). False if it had already been declared dead."""
    with transaction.atomic():
        ganhou = (
            Cluster.objects.filter(
                pk=cluster_id, encerrado_em__isnull=True, morto_em__isnull=True
            ).update(encerrado_em=Now())
            == 1
        )
        devolvidas = _devolver_mensagens()
    logger.info(
        "cluster encerrado",
        extra={"cluster_id": cluster_id, "mensagens_devolvidas": devolvidas},
    )
    return ganhou


def declarar_mortos() -> int:
    """Declare dead the clusters silent for longer than the orphan timeout,
    hand back their messages; returns how many clusters this call declared.

    1. One guarded UPDATE sets `morto_em` where it is still NULL: with several
       callers at once, PostgreSQL re-checks the WHERE of a row another
       transaction just updated, so each dead cluster is declared exactly once.
    2. In the same transaction, every message held by a cluster that is not
       alive (declared now or earlier, or stopped) goes back to the queue or
       is deleted as stale (`_devolver_mensagens`). Rows being handed back by a
       concurrent caller are skipped (SKIP LOCKED), so none is handled twice.
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Raw SQL: the ORM's update() cannot return the rows it changed.
            cursor.execute(
                """
                UPDATE relatorio_clusters SET morto_em = now()
                 WHERE encerrado_em IS NULL AND morto_em IS NULL
                   AND batimento_em < now() - make_interval(secs => %s)
                RETURNING id, host, pid, batimento_em
                """,
                [settings.RELATORIOS_ORFAO_APOS_S],
            )
            mortos = cursor.fetchall()
        for cluster_id, host, pid, batimento_em in mortos:
            logger.warning(
                "cluster declarado morto",
                extra={
                    "cluster_id": cluster_id,
                    "host": host,
                    "pid": pid,
                    "batimento_em": batimento_em.isoformat(),
                },
            )
        _devolver_mensagens()
    return len(mortos)


def anotar_replica(*, cluster_id: int, estado: replica.Estado) -> None:
    """Record how this cluster just saw the read replica (`replica.estado`)."""
    Cluster.objects.filter(pk=cluster_id).update(
        replica_vista_em=Now(),
        replica_motivo=estado.motivo,
        replica_atraso_bytes=int(estado.atraso_bytes),
        replica_atraso_s=estado.atraso_s,
    )


@dataclass(frozen=True)
class ReplicaVista:
    """The newest look any cluster took at the replica, and its age."""

    estado: replica.Estado
    idade_s: float


def replica_vista() -> ReplicaVista | None:
    """What /metrics reports of the replica: the newest look of any cluster
    (None if none ever looked). Never a connection to the replica: a scrape
    must answer even when the replica does not."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT replica_motivo, replica_atraso_bytes, replica_atraso_s,
                   extract(epoch FROM now() - replica_vista_em)
              FROM relatorio_clusters
             WHERE replica_vista_em IS NOT NULL
             ORDER BY replica_vista_em DESC
             LIMIT 1
            """
        )
        linha = cursor.fetchone()
    if linha is None:
        return None
    motivo, atraso_bytes, atraso_s, idade = linha
    return ReplicaVista(
        estado=replica.Estado(motivo, float(atraso_bytes), float(atraso_s)),
        idade_s=_segundos(idade) or 0.0,
    )


def saude() -> Saude:
    """Ages (seconds, None if never) of the newest live beat and the newest
    checker run, and the number of live clusters. One statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT extract(epoch FROM now() - max(batimento_em)
                           FILTER (WHERE encerrado_em IS NULL AND morto_em IS NULL)),
                   extract(epoch FROM now() - max(verificador_em)),
                   count(*) FILTER (WHERE encerrado_em IS NULL AND morto_em IS NULL
                       AND batimento_em >= now() - make_interval(secs => %s))
              FROM relatorio_clusters
            """,
            [settings.RELATORIOS_ORFAO_APOS_S],
        )
        batimento, verificador, vivos = cursor.fetchone()
    return Saude(
        cluster_batimento_idade_s=_segundos(batimento),
        verificador_idade_s=_segundos(verificador),
        clusters_vivos=int(vivos),
    )


@cache
def versao_do_projeto() -> str:
    """RELATORIOS_VERSAO (a deploy may set the commit), else pyproject's version.

    Not `git describe`: a production image has no .git and often no git.
    """
    if settings.RELATORIOS_VERSAO:
        return str(settings.RELATORIOS_VERSAO)
    pyproject = Path(settings.BASE_DIR) / "pyproject.toml"
    try:
        with pyproject.open("rb") as arquivo:
            return str(tomllib.load(arquivo)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return ""


def _segundos(valor: Any) -> float | None:
    return None if valor is None else round(max(0.0, float(valor)), 3)


def _devolver_mensagens() -> int:
    """Hand back the messages held by clusters that are not alive; returns how
    many went back to the queue (the stale ones are deleted).

    A held message goes back, visible at once and in its old place (its `lock`
    becomes the time it was taken), when it is the only way its job will run:
    the job is pending with a message (`enfileirado_em`) and no other message
    for it exists, waiting, delayed or held by a live cluster. Otherwise it is
    stale and deleted, because someone else owns the job's next delivery:
    - running: its worker, or the orphan sweep, which writes a new message;
    - pending with another message: a retry's delayed message, a re-enqueue;
    - pending without a message: the dispatch, when the tenant has a slot;
    - finished or gone: nobody (the cluster died before acknowledging).
    Messages of other tasks always go back. Only called inside a transaction.
    """
    fila = Conf.CLUSTER_NAME
    vivos = [
        chave_do_cluster(fila=fila, cluster_id=cluster_id)
        for cluster_id in Cluster.objects.filter(
            encerrado_em__isnull=True, morto_em__isnull=True
        ).values_list("id", flat=True)
    ]
    retidas = list(
        OrmQ.objects.select_for_update(skip_locked=True)
        .filter(key__startswith=f"{fila}@")
        .exclude(key__in=vivos)
        .order_by("lock", "id")
    )
    if not retidas:
        return 0
    job_das_retidas = {
        mensagem.pk: mensagens.id_da_mensagem(mensagem, mensagens.TAREFA_RELATORIO)
        for mensagem in retidas
    }
    ids_retidas = set(job_das_retidas)
    # The queue is small by design (a few messages per tenant): decoding it
    # all, on this rare path only, is cheaper than keeping an index of it.
    com_outra = {
        job_id
        for mensagem in OrmQ.objects.exclude(pk__in=ids_retidas)
        if (job_id := mensagens.id_da_mensagem(mensagem, mensagens.TAREFA_RELATORIO))
        is not None
    }
    aguardando = set(
        RelatorioJob.objects.filter(
            pk__in=[j for j in job_das_retidas.values() if j is not None],
            status=EstadoDoJob.PENDENTE,
            enfileirado_em__isnull=False,
        ).values_list("id", flat=True)
    )
    devolver: list[int] = []
    apagar: list[int] = []
    for mensagem in retidas:
        job_id = job_das_retidas[mensagem.pk]
        volta = job_id is None or (job_id in aguardando and job_id not in com_outra)
        if volta and job_id is not None:
            com_outra.add(job_id)  # a second held copy is a duplicate
        (devolver if volta else apagar).append(mensagem.pk)
        logger.warning(
            "mensagem devolvida" if volta else "mensagem obsoleta apagada",
            extra={"job_id": job_id, "mensagem_id": mensagem.pk, "chave": mensagem.key},
        )
    OrmQ.objects.filter(pk__in=devolver).update(
        key=fila, lock=Least(Now(), F("lock") - timedelta(seconds=Conf.RETRY))
    )
    OrmQ.objects.filter(pk__in=apagar).delete()
    return len(devolver)
