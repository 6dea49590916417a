"""A finished result's files, built once; links revoked; the download limits.

Written only by `relatorios.notificacoes.arquivos` and `.links`.
"""

from __future__ import annotations

from django.db import models

from relatorios.models.jobs import Agora, RelatorioJob


class Arquivo(models.Model):
    """One result's workbook, built once and served from here.

    Keyed by the job *and* the instant its result was finished: a job
    recomputed after its result expired has another `concluido_em`, so a file
    of the old result is never served as the new one. Deleted with its job.
    """

    id = models.BigAutoField(primary_key=True)
    # The unique constraint's index serves lookups by job; retention deletes
    # a job's files with it (jobs.retencao), the cache's own sweep the stale ones.
    job = models.ForeignKey(
        RelatorioJob, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    concluido_em = models.DateTimeField()
    formato = models.TextField()
    # The file's bytes. Stored uncompressed and out of line (migration 0019):
    # an .xlsx is already a zip, and a download reads it in slices.
    conteudo = models.BinaryField(verbose_name="conteúdo")
    tamanho = models.BigIntegerField()
    linhas = models.IntegerField()
    criado_em = models.DateTimeField(db_default=Agora())

    class Meta:
        db_table = "relatorio_arquivos"
        verbose_name = "arquivo"
        verbose_name_plural = "arquivos"
        constraints = [
            models.UniqueConstraint(
                fields=["job", "concluido_em", "formato"],
                name="relatorio_arquivos_job_resultado",
            )
        ]

    def __str__(self) -> str:
        return f"{self.formato} do job {self.job_id} ({self.tamanho} bytes)"


class LinkRevogado(models.Model):
    """A result whose download links no longer open (support's "expirar
    resultado"): links name the job and its `concluido_em`, so a recomputed
    result is not affected."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(
        RelatorioJob, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    concluido_em = models.DateTimeField()
    criado_em = models.DateTimeField(db_default=Agora())

    class Meta:
        db_table = "relatorio_links_revogados"
        verbose_name = "link revogado"
        verbose_name_plural = "links revogados"
        constraints = [
            models.UniqueConstraint(
                fields=["job", "concluido_em"], name="relatorio_links_revogados_job"
            )
        ]

    def __str__(self) -> str:
        return f"links do job {self.job_id} ({self.concluido_em:%Y-%m-%d %H:%M})"


class JanelaDeDownload(models.Model):
    """The signed downloads' fixed-window counters, one per link and per
    client address (`notificacoes.links.contar`); unlogged, like the API's:
    a crash that loses them only forgets a minute of counting."""

    chave = models.TextField(primary_key=True)
    janela = models.BigIntegerField()
    pedidos = models.IntegerField()

    class Meta:
        db_table = "relatorio_limites_download"
        verbose_name = "janela de download"
        verbose_name_plural = "janelas de download"

    def __str__(self) -> str:
        return f"{self.chave}: {self.pedidos}"
