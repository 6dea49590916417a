from __future__ import annotations

from django.db import models


class EventoPublicado(models.Model):
    """One event of a tenant's stream (job, alert, scheduled delivery), kept
    for RELATORIOS_EVENTOS_RETENCAO_S so a client resumes from it.

    Written only by the database's triggers (relatorios/banco/sql/
    relatorios_publicar.sql), at the commit of the change it reports; the id
    follows commit order except across overlapping commits, which the
    events processes' reader waits out (relatorios/eventos/ordem.py). No
    foreign keys: it is a log that outlives the
    jobs retention deletes, and the insert sits on the submit and claim
    paths, where each check costs.
    """

    id = models.BigIntegerField(primary_key=True)
    tenant_id = models.BigIntegerField()
    job_id = models.BigIntegerField(null=True)
    tipo = models.TextField()
    dados = models.JSONField()
    criado_em = models.DateTimeField()

    class Meta:
        db_table = "relatorio_eventos"
        verbose_name = "evento publicado"
        verbose_name_plural = "eventos publicados"
        indexes = [
            # A stream's resume: the tenant's events after the client's
            # Last-Event-ID, in order (also its starting point, max(id)).
            models.Index(fields=["tenant_id", "id"], name="relatorio_eventos_tenant"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.tipo}"
