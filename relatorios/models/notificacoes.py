"""The notifications' tables: webhooks, the outbox of deliveries, email subscriptions.

Written only by `relatorios.notificacoes`, through guarded statements.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import models

from relatorios.models.agendamentos import Alerta, Ocorrencia
from relatorios.models.jobs import Agora, RelatorioJob
from relatorios.models.tenants import Tenant


class Evento(models.TextChoices):
    JOB_PRONTO = "job.pronto", "relatório pronto"
    JOB_FALHOU = "job.falhou", "relatório falhou"
    ALERTA_ABERTO = "alerta.aberto", "alerta aberto"
    ALERTA_FECHADO = "alerta.fechado", "alerta fechado"
    AGENDAMENTO_ENTREGUE = "agendamento.entregue", "agendamento entregue"
    # Email only: the alerts one check pass opened for a tenant, in one
    # message per recipient (past RELATORIOS_ALERTAS_RESUMO_APOS of them).
    ALERTAS_RESUMO = "alertas.resumo", "resumo de alertas"


class Webhook(models.Model):
    """A tenant's endpoint for events: its own (signed per Standard Webhooks)
    or a chat's incoming webhook, by `canal` (notificacoes.canais)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, related_name="webhooks"
    )
    # A channel of notificacoes.canais that takes a URL; the registry, not a
    # list here, says which exist (a new channel needs no migration).
    canal = models.TextField(default="webhook")
    url = models.URLField(max_length=2000)
    # `whsec_` + base64 of the key, as Standard Webhooks libraries expect.
    segredo = models.TextField()
    eventos = models.JSONField(default=list)
    ativo = models.BooleanField(default=True)
    criado_por = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    criado_em = models.DateTimeField(db_default=Agora())

    class Meta:
        db_table = "relatorio_webhooks"
        verbose_name = "webhook"
        verbose_name_plural = "webhooks"
        ordering = ["tenant", "id"]

    def __str__(self) -> str:
        # The admin's titles, its log entries and its forms' choices: never
        # the whole URL (a chat's is its credential).
        return f"{self.canal}: {url_mascarada(self.url)}"


def url_mascarada(url: str) -> str:
    """A URL as anyone but its creator sees it when it may be a credential
    (a chat's incoming webhook: Slack's path, Teams' `sig=`, Google Chat's
    `key=` and `token=`): its scheme, its host and its last 4 characters."""
    partes = urlsplit(url)
    return f"{partes.scheme}://{partes.hostname}/…{url[-4:]}"


class EstadoEntrega(models.TextChoices):
    PENDENTE = "pendente", "pendente"
    ENTREGUE = "entregue", "entregue"
    FALHOU = "falhou", "falhou (tentativas esgotadas)"


class Entrega(models.Model):
    """One notification to deliver (the outbox): written in the transaction of
    the change it reports, sent later by a queued task, retried with backoff."""

    id = models.BigAutoField(primary_key=True)
    # Deterministic per event and destination (the `webhook-id` header): a
    # second insert of the same notification conflicts instead of duplicating.
    mensagem_id = models.TextField()
    tenant = models.ForeignKey(
        Tenant,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    # notificacoes.canais: how it is sent (email, webhook, slack, ...).
    canal = models.TextField()
    evento = models.TextField(choices=Evento.choices)
    webhook = models.ForeignKey(
        Webhook,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="entregas",
    )
    destinatarios = models.JSONField(
        default=list, blank=True, verbose_name="destinatários"
    )
    payload = models.JSONField()
    job = models.ForeignKey(
        RelatorioJob,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    alerta = models.ForeignKey(
        Alerta,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="entregas",
    )
    # A scheduled report's delivery (agendamento.entregue).
    ocorrencia = models.ForeignKey(
        Ocorrencia,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="entregas",
        verbose_name="ocorrência",
    )
    estado = models.TextField(
        choices=EstadoEntrega.choices, default=EstadoEntrega.PENDENTE
    )
    tentativas = models.IntegerField(default=0)
    ultimo_status = models.IntegerField(
        null=True, blank=True, verbose_name="último status"
    )
    ultimo_erro = models.TextField(blank=True, default="", verbose_name="último erro")
    proxima_em = models.DateTimeField(
        db_default=Agora(), verbose_name="próxima tentativa em"
    )
    # When its queue message was written (the sweep replaces lost ones);
    # NULL while it waits for one of its tenant's slots (notificacoes.vagas).
    enfileirada_em = models.DateTimeField(null=True, blank=True)
    # A sender holds it until then (a crashed sender's lease runs out).
    em_curso_ate = models.DateTimeField(
        null=True, blank=True, verbose_name="em curso até"
    )
    entregue_em = models.DateTimeField(null=True, blank=True)
    criado_em = models.DateTimeField(db_default=Agora())

    class Meta:
        db_table = "relatorio_entregas"
        verbose_name = "entrega"
        verbose_name_plural = "entregas"
        ordering = ["-criado_em"]
        permissions = [("reenviar_entrega", "Pode reenviar entregas")]
        constraints = [
            models.UniqueConstraint(
                fields=["mensagem_id"], name="relatorio_entregas_mensagem"
            )
        ]
        indexes = [
            # The sender's and the sweep's work list: pending deliveries by due time.
            models.Index(
                fields=["proxima_em"],
                name="relatorio_entregas_pendentes",
                condition=models.Q(estado="pendente"),
            ),
            models.Index(fields=["criado_em"], name="relatorio_entregas_criado"),
            # A tenant's deliveries in flight (with a queue message) and those
            # waiting for one of its slots (notificacoes.vagas): counted and
            # picked per tenant on every dispatch (the in-flight one also
            # counted whole, for the bound across tenants).
            models.Index(
                fields=["tenant"],
                name="relatorio_entregas_em_voo",
                condition=models.Q(estado="pendente", enfileirada_em__isnull=False),
            ),
            models.Index(
                fields=["tenant", "proxima_em"],
                name="relatorio_entregas_na_espera",
                condition=models.Q(estado="pendente", enfileirada_em__isnull=True),
            ),
            # The per-tenant daily email cap counts a tenant's emails of the
            # last 24 hours (notificacoes.saida).
            models.Index(
                fields=["tenant", "criado_em"],
                name="relatorio_entregas_emails",
                condition=models.Q(canal="email"),
            ),
            # Retention empties job_id of the deliveries of each deleted job
            # (retencao._APAGAR_JOBS), and the admin filters deliveries by
            # job: without it both scan the whole table.
            models.Index(
                fields=["job"],
                name="relatorio_entregas_job",
                condition=models.Q(job__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.evento} → {self.canal} ({self.estado})"


class Inscricao(models.Model):
    """Someone who asked for an email when this job ends (`notificar_email`).

    Not part of the request's parameters nor its chave: twenty managers asking
    for the same report share one job and each gets an email.
    """

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(
        RelatorioJob, on_delete=models.CASCADE, related_name="inscricoes"
    )
    email = models.EmailField()
    criado_em = models.DateTimeField(db_default=Agora())

    class Meta:
        db_table = "relatorio_inscricoes"
        verbose_name = "inscrição"
        verbose_name_plural = "inscrições"
        constraints = [
            models.UniqueConstraint(
                fields=["job", "email"], name="relatorio_inscricoes_job_email"
            )
        ]

    def __str__(self) -> str:
        return f"{self.email} ← job {self.job_id}"
