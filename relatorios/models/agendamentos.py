"""The silent half of seed 004: schedules, their occurrences, absence alerts.

Written by `relatorios.agendamentos` (agenda, disparo, alertas) through
guarded statements, never `save()` from a view. The clusters that fire them
are `models.clusters`; the notifications they send, `models.notificacoes`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from relatorios.models.cron import descrever, em_palavras
from relatorios.models.jobs import Agora, RelatorioJob
from relatorios.models.tenants import Tenant


class Periodo(models.TextChoices):
    """A period relative to the planned firing, in the tenant's time zone."""

    ONTEM = "ontem", "ontem"
    SEMANA_ANTERIOR = "semana_anterior", "semana anterior (segunda a domingo)"
    MES_ANTERIOR = "mes_anterior", "mês anterior"
    MES_CORRENTE_ATE_ONTEM = "mes_corrente_ate_ontem", "mês corrente até ontem"
    ANO_ANTERIOR = "ano_anterior", "ano anterior"


class Recuperacao(models.TextChoices):
    """What to run for occurrences missed while no cluster fired them."""

    ULTIMA = "ultima", "só a mais recente"
    PULAR = "pular", "nenhuma"


class FormaDeEntrega(models.TextChoices):
    """How a schedule's finished report reaches its `destinatarios`."""

    ANEXO = "anexo", "e-mail com a planilha anexada (e o link)"
    LINK = "link", "e-mail só com o link para baixar"


class PularEntrega(models.TextChoices):
    """Which finished reports a schedule does not send (Metabase's "skip if no
    results"): the occurrence still counts as delivered on time."""

    NUNCA = "nunca", "enviar sempre"
    VAZIO = "vazio", "não enviar um relatório vazio"
    IGUAL = "igual", "não enviar um relatório igual ao último enviado"
    VAZIO_OU_IGUAL = "vazio_ou_igual", "não enviar um relatório vazio nem igual"


class MotivoDoPulo(models.TextChoices):
    """Why an occurrence's report was not sent (`Ocorrencia.pulada_por`)."""

    VAZIO = "vazio", "relatório vazio"
    IGUAL = "igual", "igual ao último enviado"


class Agendamento(models.Model):
    """A report a tenant wants on a cron schedule, due within `prazo` of each firing."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, related_name="agendamentos"
    )
    nome = models.CharField(max_length=200, blank=True, default="")
    tipo = models.TextField()
    # The parameter template: a relative period plus fixed stores and grouping.
    periodo = models.TextField(choices=Periodo.choices, verbose_name="período")
    agrupar = models.TextField(default="dia")
    lojas = models.JSONField(default=list, blank=True)
    # Five fields, evaluated on the tenant's wall clock.
    cron = models.TextField()
    # The report must be `pronto` this long after the planned firing.
    prazo = models.DurationField()
    destinatarios = models.JSONField(
        default=list, blank=True, verbose_name="destinatários"
    )
    # When an occurrence's report is `pronto`: one email to `destinatarios`
    # (the .xlsx attached, or the link alone), and `agendamento.entregue` to
    # each of the tenant's webhooks named here (ids).
    entrega = models.TextField(
        choices=FormaDeEntrega.choices, default=FormaDeEntrega.ANEXO
    )
    webhooks = models.JSONField(default=list, blank=True)
    # Which finished reports are not sent (agendamentos.entregas).
    pular = models.TextField(
        choices=PularEntrega.choices,
        default=PularEntrega.NUNCA,
        db_default=PularEntrega.NUNCA,
    )
    recuperacao = models.TextField(
        choices=Recuperacao.choices,
        default=Recuperacao.ULTIMA,
        verbose_name="recuperação",
    )
    ativo = models.BooleanField(default=True)
    criado_por = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    criado_em = models.DateTimeField(db_default=Agora())
    # Occurrences planned after this instant are owed (creation or resume).
    ativo_desde = models.DateTimeField(db_default=Agora())
    pausado_em = models.DateTimeField(null=True, blank=True)
    # Deleted schedules stay for their history (occurrences, alerts).
    excluido_em = models.DateTimeField(
        null=True, blank=True, verbose_name="excluído em"
    )
    # The next planned firing not yet fired (UTC); NULL while paused.
    proximo_disparo = models.DateTimeField(
        null=True, blank=True, verbose_name="próximo disparo"
    )
    # The checker has a ledger row for every occurrence planned up to here
    # whose deadline passed; it never looks before this again.
    verificado_ate = models.DateTimeField(
        db_default=Agora(), verbose_name="verificado até"
    )
    # When the next occurrence's deadline passes (its planned firing + prazo):
    # the checker looks at a schedule only then, not on every pass. NULL
    # while paused (what was due is recorded when pausing).
    proxima_verificacao = models.DateTimeField(
        null=True, blank=True, verbose_name="próxima verificação"
    )

    class Meta:
        db_table = "relatorio_agendamentos"
        verbose_name = "agendamento"
        verbose_name_plural = "agendamentos"
        ordering = ["tenant", "id"]
        indexes = [
            # The firing loop: active schedules whose next firing is due.
            models.Index(
                fields=["proximo_disparo"],
                name="relatorio_agend_proximo",
                condition=models.Q(ativo=True),
            ),
            # The checker's: active schedules whose next deadline has passed.
            models.Index(
                fields=["proxima_verificacao"],
                name="relatorio_agend_verificacao",
                condition=models.Q(ativo=True),
            ),
        ]

    def __str__(self) -> str:
        return self.nome or f"agendamento {self.pk} ({self.tipo})"

    @property
    def quando(self) -> str:
        """The cron alone in words ("de segunda a sexta, às 07:00"): a list's
        short column, the full `descricao` one hover away."""
        return em_palavras(self.cron)

    @property
    def descricao(self) -> str:
        """The cron in words on the tenant's clock, with the next firing (pt-BR).

        Reads `tenant`: select it with the schedule where many are shown.
        """
        return descrever(self.cron, self.tenant.fuso_horario, self.proximo_disparo)


class EstadoOcorrencia(models.TextChoices):
    DISPARADA = "disparada", "disparada"
    PULADA = "pulada", "pulada (perdida durante uma parada)"
    RECUSADA = "recusada", "recusada (pedido inválido ou limite do tenant)"
    NAO_DISPARADA = "nao_disparada", "não disparada (nenhum cluster disparou)"


class Ocorrencia(models.Model):
    """One planned firing of a schedule: the ledger row that makes it happen once.

    Firing inserts it (ON CONFLICT DO NOTHING): however many clusters fire at
    once, one wins. The checker inserts the ones nobody fired.
    """

    id = models.BigAutoField(primary_key=True)
    agendamento = models.ForeignKey(
        Agendamento, on_delete=models.PROTECT, related_name="ocorrencias"
    )
    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    planejado_para = models.DateTimeField()
    params = models.JSONField(null=True, blank=True)
    job = models.ForeignKey(
        RelatorioJob,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="ocorrencias",
    )
    estado = models.TextField(choices=EstadoOcorrencia.choices)
    # Why no job: the 400/429 reason, the catch-up policy, the pause.
    motivo = models.TextField(blank=True, default="")
    prazo_em = models.DateTimeField()
    disparada_em = models.DateTimeField(null=True, blank=True)
    criado_em = models.DateTimeField(db_default=Agora())
    # The checker is done with it: pronto in time, or its alert is open.
    conferida = models.BooleanField(default=False)
    # When its report, `pronto`, was sent to the schedule's recipients (the
    # deliveries written; `alertas.entregar_prontas`), once; NULL until then.
    entregue_em = models.DateTimeField(null=True, blank=True)
    # How it was delivered (the schedule's `entrega` at that moment, set with
    # `entregue_em`): an attachment's opens cannot be seen, a link's can
    # (`agendamentos.aberturas`); the schedule's mode may change since.
    entregue_como = models.TextField(  # noqa: DJ001 (NULL until delivered)
        choices=FormaDeEntrega.choices, null=True, blank=True
    )
    # Delivered without sending anything, and why (the schedule's `pular`):
    # it still counts as delivered on time. NULL: sent (or not delivered yet).
    pulada_por = models.TextField(  # noqa: DJ001 (NULL: not skipped)
        choices=MotivoDoPulo.choices, null=True, blank=True
    )
    # md5 of the result it delivered (set with `entregue_em`): a later one
    # identical to the last one sent can be skipped.
    resultado_md5 = models.CharField(max_length=32, null=True, blank=True)  # noqa: DJ001 (NULL until delivered)

    class Meta:
        db_table = "relatorio_ocorrencias"
        verbose_name = "ocorrência"
        verbose_name_plural = "ocorrências"
        ordering = ["-planejado_para"]
        constraints = [
            # The one guard against duplicate firing: (schedule, planned time).
            models.UniqueConstraint(
                fields=["agendamento", "planejado_para"],
                name="relatorio_ocorrencias_unica",
            )
        ]
        indexes = [
            # The checker's work list: occurrences it has not settled yet.
            models.Index(
                fields=["prazo_em"],
                name="relatorio_ocorr_a_conferir",
                condition=models.Q(conferida=False),
            ),
            # A tenant's latest occurrences (/painel/).
            models.Index(
                fields=["tenant", "-planejado_para"], name="relatorio_ocorr_tenant"
            ),
            # The delivery pass: occurrences with a job, not delivered yet
            # (alertas.entregar_prontas joins them to their jobs).
            models.Index(
                fields=["job"],
                name="relatorio_ocorr_a_entregar",
                condition=models.Q(entregue_em__isnull=True, job__isnull=False),
            ),
            # Each schedule's last delivery (/painel/).
            models.Index(
                fields=["agendamento", "-entregue_em"],
                name="relatorio_ocorr_entregues",
                condition=models.Q(entregue_em__isnull=False),
            ),
            # The operations dashboard's occurrences per day, all tenants
            # (admin/consultas_do_painel.ocorrencias_por_dia).
            models.Index(fields=["planejado_para"], name="relatorio_ocorr_planejadas"),
        ]

    def __str__(self) -> str:
        return f"{self.agendamento_id} @ {self.planejado_para:%Y-%m-%d %H:%M}"


class Abertura(models.Model):
    """Someone opened a delivered report: the first and the last time, per
    occurrence and destination, and nothing more (`agendamentos.aberturas`).

    `destino` is the one the signed link names (`notificacoes.links`: a digest
    of the recipient's address, or the webhook), or the user who opened the
    job page or downloaded its file (the digest of their email; their id if
    they have none), so a recipient who does both is one row.
    """

    id = models.BigAutoField(primary_key=True)
    # Indexed by the unique constraint's first column.
    ocorrencia = models.ForeignKey(
        Ocorrencia,
        on_delete=models.CASCADE,
        related_name="aberturas",
        db_index=False,
        verbose_name="ocorrência",
    )
    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    destino = models.TextField()
    primeira_em = models.DateTimeField(db_default=Agora())
    ultima_em = models.DateTimeField(db_default=Agora(), verbose_name="última em")

    class Meta:
        db_table = "relatorio_aberturas"
        verbose_name = "abertura"
        verbose_name_plural = "aberturas"
        constraints = [
            # One row per (occurrence, destination): the upsert's target, and
            # the index the "was it opened" lookups read (its first column).
            models.UniqueConstraint(
                fields=["ocorrencia", "destino"], name="relatorio_aberturas_unica"
            )
        ]

    def __str__(self) -> str:
        return f"ocorrência {self.ocorrencia_id} aberta por {self.destino}"


class Alerta(models.Model):
    """An occurrence whose deadline passed without its report `pronto`."""

    id = models.BigAutoField(primary_key=True)
    ocorrencia = models.OneToOneField(
        Ocorrencia,
        on_delete=models.PROTECT,
        related_name="alerta",
        verbose_name="ocorrência",
    )
    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    motivo = models.TextField()
    aberto_em = models.DateTimeField(db_default=Agora())
    fechado_em = models.DateTimeField(null=True, blank=True)
    # Empty when it closed by itself (the job became pronto).
    fechado_por = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    nota = models.TextField(blank=True, default="")

    class Meta:
        db_table = "relatorio_alertas"
        verbose_name = "alerta"
        verbose_name_plural = "alertas"
        ordering = ["-aberto_em"]
        permissions = [("fechar_alerta", "Pode fechar alertas com uma nota")]
        indexes = [
            # Open alerts: the landing page's count, the auto-close pass.
            models.Index(
                fields=["aberto_em"],
                name="relatorio_alertas_abertos",
                condition=models.Q(fechado_em__isnull=True),
            ),
            models.Index(
                fields=["tenant", "-aberto_em"], name="relatorio_alertas_tenant"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"alerta {self.pk} ({'aberto' if self.fechado_em is None else 'fechado'})"
        )

    @property
    def aberto(self) -> bool:
        return self.fechado_em is None
