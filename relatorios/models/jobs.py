from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, models

from relatorios.banco.comum import json_do_banco
from relatorios.models.tenants import Tenant


class Agora(models.Func):
    """PostgreSQL's now() (transaction time), seed 000's column default.

    Django's Now() compiles to statement_timestamp(); the schema test compares
    the default with the seed's text.
    """

    template = "now()"
    output_field = models.DateTimeField()


class EstadoDoJob(models.TextChoices):
    PENDENTE = "pendente", "pendente"
    EXECUTANDO = "executando", "executando"
    PRONTO = "pronto", "pronto"
    FALHOU = "falhou", "falhou"


# A job in ATIVOS still owes its requester an answer; TERMINAIS already gave one.
ATIVOS = (EstadoDoJob.PENDENTE, EstadoDoJob.EXECUTANDO)
TERMINAIS = (EstadoDoJob.PRONTO, EstadoDoJob.FALHOU)


class RelatorioJobQuerySet(models.QuerySet["RelatorioJob"]):
    def do_tenant(self, tenant_id: int) -> RelatorioJobQuerySet:
        return self.filter(tenant_id=tenant_id)

    def ativos(self) -> RelatorioJobQuerySet:
        return self.filter(status__in=ATIVOS)

    def travados(self) -> RelatorioJobQuerySet:
        """Running, but the heartbeat is older than the orphan timeout."""
        limite = Agora() - timedelta(seconds=settings.RELATORIOS_ORFAO_APOS_S)
        return self.filter(status=EstadoDoJob.EXECUTANDO, heartbeat_em__lt=limite)

    def expirados(self) -> RelatorioJobQuerySet:
        """Finished, but past the validity: the next request recomputes."""
        return self.filter(status=EstadoDoJob.PRONTO, expira_em__lt=Agora())


class RelatorioJob(models.Model):
    """One report request of a tenant (seed 000's relatorio_jobs), unique by chave."""

    # The columns mirror seed 000 exactly; tests/api/test_esquema.py reads the
    # catalog so a migration cannot drift from it. Extra columns are marked.
    id = models.BigAutoField(primary_key=True)
    chave = models.TextField()
    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, db_index=False, related_name="jobs"
    )
    tipo = models.TextField()
    params = models.JSONField()
    status = models.TextField(choices=EstadoDoJob.choices, default=EstadoDoJob.PENDENTE)
    tentativas = models.IntegerField(db_default=0)
    erro = models.TextField(null=True, blank=True)  # noqa: DJ001 (seed: nullable)
    resultado = models.JSONField(null=True, blank=True)
    criado_em = models.DateTimeField(db_default=Agora())
    iniciado_em = models.DateTimeField(null=True, blank=True)
    heartbeat_em = models.DateTimeField(null=True, blank=True)
    concluido_em = models.DateTimeField(null=True, blank=True)
    expira_em = models.DateTimeField(null=True, blank=True)
    # Extra: 0..100, written by the worker after each chunk of the report.
    progresso = models.SmallIntegerField(db_default=0)
    # Extra: the traceback behind `erro`, for support staff only.
    erro_detalhe = models.TextField(null=True, blank=True)  # noqa: DJ001 (as erro)
    # Extra: a retry waiting for its backoff is not claimed before this.
    proxima_tentativa_em = models.DateTimeField(
        null=True, blank=True, verbose_name="próxima tentativa em"
    )
    # Extra: when the job's current queue message was written; NULL while it
    # waits, without a message, for a free slot of its tenant.
    enfileirado_em = models.DateTimeField(null=True, blank=True)
    # Extra: {"partes": [...], "feitas": n}, how the job splits and how many
    # chunks are done (their results are rows of relatorio_parciais), so a
    # retry resumes instead of starting over.
    checkpoint = models.JSONField(null=True, blank=True)
    # Extra: who first asked for it (later requests of the same key reuse the row).
    solicitado_por = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        db_index=False,
        related_name="+",
    )
    # Extra: the X-Request-ID of the request that created (or restarted) it,
    # on every worker log line and webhook delivery about it; NULL for jobs
    # a schedule submitted.
    request_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001 (absent is not "")
    # Extra: when it was computed ahead of a request (jobs.antecipacao); NULL
    # for a job a person (or a schedule) asked for.
    antecipado_em = models.DateTimeField(null=True, blank=True)
    # Extra: when it was first asked for, the request history computing ahead
    # learns from: the insert's time for an asked job, and for one computed
    # ahead the first request it answered (NULL while nobody asked for it).
    pedido_em = models.DateTimeField(null=True, blank=True, db_default=Agora())

    objects = RelatorioJobQuerySet.as_manager()

    class Meta:
        db_table = "relatorio_jobs"
        verbose_name = "job de relatório"
        verbose_name_plural = "jobs de relatório"
        # Support's actions (reexecutar, marcar como falhou, expirar resultado):
        # changing a job is not "change" (no field is ever edited by hand).
        permissions = [
            ("operar_relatoriojob", "Pode reexecutar, marcar como falhou e expirar"),
            # The operations dashboard (/admin/painel/, relatorios/admin/painel.py):
            # reads only, across tenants.
            ("ver_painel", "Pode ver o painel de operação"),
        ]
        constraints = [
            # Named as PostgreSQL names seed 000's inline `chave text UNIQUE`; the
            # submit's INSERT ... ON CONFLICT (chave) is arbitrated by it.
            models.UniqueConstraint(fields=["chave"], name="relatorio_jobs_chave_key"),
            models.CheckConstraint(
                condition=models.Q(status__in=EstadoDoJob.values),
                name="relatorio_jobs_status_check",
            ),
            models.CheckConstraint(
                condition=models.Q(progresso__gte=0, progresso__lte=100),
                name="relatorio_jobs_progresso_check",
            ),
        ]
        indexes = [
            # The queue only looks at pending jobs: the claim and the sweep's
            # lost-message check read `status = 'pendente' ORDER BY criado_em`;
            # the partial index stays small with millions of old jobs.
            models.Index(
                fields=["criado_em"],
                name="relatorio_jobs_fila",
                condition=models.Q(status="pendente"),
            ),
            # The per-tenant running limit (count of executando per tenant) and
            # the orphan sweep (executando with an old heartbeat).
            models.Index(
                fields=["tenant"],
                name="relatorio_jobs_executando",
                condition=models.Q(status="executando"),
            ),
            # Per-tenant pending work: the 429 cap, the running-slot count and
            # the dispatch of a tenant's oldest waiting job when a slot frees.
            models.Index(
                fields=["tenant", "criado_em"],
                name="relatorio_jobs_pendentes",
                condition=models.Q(status="pendente"),
            ),
            # A tenant's recent jobs, newest first (manager pages, admin filter).
            models.Index(
                fields=["tenant", "-criado_em"], name="relatorio_jobs_recentes"
            ),
            # The admin's change list across tenants: newest first, the date
            # hierarchy's bounds (min/max), date ranges, the landing page's
            # "last 24 h" per type.
            models.Index(fields=["criado_em"], name="relatorio_jobs_criado"),
            # Computing ahead (jobs.antecipacao): the jobs computed ahead, per
            # tenant, for their precision and recall. Partial: an asked job
            # writes no entry (the request history is read through
            # relatorio_jobs_recentes instead, so a submit writes nothing more).
            models.Index(
                fields=["tenant", "antecipado_em"],
                name="relatorio_jobs_antecipados",
                condition=models.Q(antecipado_em__isnull=False),
            ),
            # The admin's "falhou nas últimas 24 h" and "falhou" filter: failures
            # are few, so the partial index stays small.
            models.Index(
                fields=["concluido_em"],
                name="relatorio_jobs_falhos",
                condition=models.Q(status="falhou"),
            ),
            # The operations dashboard's jobs finished per hour by status
            # (admin/consultas_do_painel.concluidos_por_hora): the last 7 days
            # by concluido_em, status included for an index-only scan. Only
            # finishing writes an entry (the submit and the claim do not).
            models.Index(
                fields=["concluido_em"],
                include=["status"],
                name="relatorio_jobs_concluidos",
                condition=models.Q(status__in=["pronto", "falhou"]),
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.tipo}, {self.status})"

    @property
    def ativo(self) -> bool:
        return self.status in ATIVOS

    def params_dict(self) -> dict[str, Any]:
        return dict(self.params or {})


class Desfecho(models.TextChoices):
    PRONTO = "pronto", "pronto"
    FALHOU = "falhou", "falhou"
    ADIADO = "adiado", "adiado (falha transitória)"
    ORFAO = "orfao", "órfão (o worker parou de responder)"
    DEVOLVIDO = "devolvido", "devolvido (cluster parando)"
    INTERROMPIDO = "interrompido", "interrompido pelo suporte"


class RelatorioTentativa(models.Model):
    """One attempt at a job: who ran it, from when to when, and how it ended.

    The job row keeps only its latest attempt; this ledger keeps them all, so
    support can read a job's history (died, retried after a deadlock, done).
    """

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(
        RelatorioJob, on_delete=models.CASCADE, related_name="historico"
    )
    numero = models.IntegerField(verbose_name="número")
    # The claim's timestamp: with job_id, the same fence the job row uses.
    iniciado_em = models.DateTimeField()
    terminado_em = models.DateTimeField(null=True, blank=True)
    desfecho = models.TextField(choices=Desfecho.choices, null=True, blank=True)  # noqa: DJ001 (NULL while running)
    erro = models.TextField(null=True, blank=True)  # noqa: DJ001 (as the job's)
    # host:pid of the worker process.
    trabalhador = models.TextField(blank=True, default="")

    class Meta:
        db_table = "relatorio_tentativas"
        verbose_name = "tentativa"
        verbose_name_plural = "tentativas"
        ordering = ["job", "iniciado_em"]
        constraints = [
            # Closing an attempt looks it up by (job_id, iniciado_em).
            models.UniqueConstraint(
                fields=["job", "iniciado_em"], name="relatorio_tentativas_job_inicio"
            )
        ]
        indexes = [
            # The operations dashboard's worker time per tenant
            # (admin/consultas_do_painel.tenants_por_tempo): the attempts
            # started in the last 24 h. iniciado_em is written once, so
            # closing an attempt stays a HOT update.
            models.Index(fields=["iniciado_em"], name="relatorio_tentativas_inicio"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} tentativa {self.numero}"


class RelatorioParcial(models.Model):
    """One finished chunk's partial result: with the job's `checkpoint` (which
    chunks, how many done), what a retry resumes from.

    A row per chunk rather than an array inside `checkpoint`: appending to a
    jsonb value rewrites all of it, so a job of n chunks wrote n²/2 chunks'
    worth of jsonb (0.5 s of progress writes on a 0.12 s `estoque`). Rows live
    while the job may resume; finishing, failing or restarting deletes them.
    """

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(
        RelatorioJob,
        on_delete=models.CASCADE,
        related_name="parciais",
        db_index=False,  # the unique (job, parte) serves lookups by job
    )
    # The chunk's position in checkpoint["partes"].
    parte = models.IntegerField()
    parcial = models.JSONField()

    class Meta:
        db_table = "relatorio_parciais"
        verbose_name = "resultado parcial"
        verbose_name_plural = "resultados parciais"
        constraints = [
            models.UniqueConstraint(
                fields=["job", "parte"], name="relatorio_parciais_job_parte"
            )
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} parte {self.parte}"


def linhas_do_resultado(
    job: RelatorioJob, *, limite: int | None = None, lote: int = 2000
) -> Iterator[dict[str, Any]]:
    """The result's lines one by one, through a server-side cursor: a CSV of
    a hundred thousand lines streams without the whole result in memory.

    `job` comes from a tenant-scoped read (jobs.consultas.job_do_tenant)."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(
            """
            SELECT linha
              FROM relatorio_jobs,
                   jsonb_array_elements(
                       CASE WHEN jsonb_typeof(resultado -> 'linhas') = 'array'
                            THEN resultado -> 'linhas' ELSE '[]'::jsonb END
                   ) WITH ORDINALITY AS l(linha, n)
             WHERE id = %s AND tenant_id = %s
             ORDER BY n
             LIMIT %s
            """,
            [job.pk, job.tenant_id, limite],
        )
        while linhas := cursor.fetchmany(lote):
            for (linha,) in linhas:
                yield json_do_banco(linha)


def totais_do_resultado(job: RelatorioJob) -> dict[str, Any]:
    """The result's `totais` alone, read in the database: the workbook's
    totals row needs them, and the whole result may be large."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT resultado -> 'totais' FROM relatorio_jobs"
            " WHERE id = %s AND tenant_id = %s",
            [job.pk, job.tenant_id],
        )
        linha = cursor.fetchone()
    totais = json_do_banco(linha[0]) if linha else None
    return totais if isinstance(totais, dict) else {}
