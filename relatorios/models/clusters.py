"""The clusters that run jobs and fire schedules; their liveness is `fila.clusters`."""

from __future__ import annotations

from django.db import models

from relatorios.models.jobs import Agora


class Cluster(models.Model):
    """A running qcluster: who watches the watcher.

    Each cluster beats here; one silent for longer than the orphan timeout is
    dead, and the queue messages it held are given back.
    """

    id = models.BigAutoField(primary_key=True)
    host = models.TextField()
    pid = models.IntegerField()
    versao = models.TextField(blank=True, default="", verbose_name="versão")
    iniciado_em = models.DateTimeField(db_default=Agora())
    batimento_em = models.DateTimeField(db_default=Agora())
    # The last pass of this cluster's checker (alertas.verificar).
    verificador_em = models.DateTimeField(null=True, blank=True)
    # Stopped gracefully, or declared dead by a peer (messages handed back).
    encerrado_em = models.DateTimeField(null=True, blank=True)
    morto_em = models.DateTimeField(null=True, blank=True)
    # The read replica as this cluster last saw it (banco.replica.estado), for
    # /metrics, which never asks the replica itself; NULL: never looked.
    # Defaults in the database: a cluster of the previous version, still
    # running during a deploy, registers without naming them.
    replica_vista_em = models.DateTimeField(null=True, blank=True)
    replica_motivo = models.TextField(blank=True, db_default="")
    replica_atraso_bytes = models.BigIntegerField(db_default=0)
    replica_atraso_s = models.FloatField(db_default=0.0)

    class Meta:
        db_table = "relatorio_clusters"
        verbose_name = "cluster"
        verbose_name_plural = "clusters"
        ordering = ["-batimento_em"]

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"
