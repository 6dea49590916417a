from __future__ import annotations

import zoneinfo
from typing import Any

from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import connection, models
from django.db.models import QuerySet


def validar_fuso(valor: str) -> None:
    try:
        zoneinfo.ZoneInfo(valor)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationError(f"fuso horário desconhecido: {valor}") from exc


class Tenant(models.Model):
    """A client company (a store chain): the boundary no data ever crosses."""

    id = models.BigAutoField(primary_key=True)
    nome = models.CharField(max_length=200)
    fuso_horario = models.CharField(
        max_length=64,
        default="America/Sao_Paulo",
        validators=[validar_fuso],
        verbose_name="fuso horário",
    )
    criado_em = models.DateTimeField(auto_now_add=True)
    # The only domains (and their subdomains) its email addresses may have:
    # schedules' recipients, the users' own (notificacoes/enderecos.py). IDNA,
    # lower case; empty: any domain. Set by support in the admin.
    dominios_email = models.JSONField(
        default=list, blank=True, verbose_name="domínios de e-mail"
    )
    # Computing ahead of requests (jobs.antecipacao), on unless its managers or
    # support turned it off for this tenant.
    antecipar = models.BooleanField(default=True, db_default=True)

    class Meta:
        db_table = "tenants"
        ordering = ["nome"]
        permissions = [
            (
                "definir_dominios_email",
                "Pode definir os domínios de e-mail permitidos do tenant",
            )
        ]

    def __str__(self) -> str:
        return self.nome


class Usuario(AbstractUser):
    """A person or client app; managers belong to one tenant, support staff to none."""

    tenant = models.ForeignKey(
        Tenant,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="usuarios",
    )

    class Meta:
        db_table = "usuarios"
        verbose_name = "usuário"
        verbose_name_plural = "usuários"

    def __str__(self) -> str:
        return self.username


class LimiteDoTenant(Exception):
    """The tenant already has as many of something as a setting allows.

    A 409, not a 429: waiting does not help; deleting one does.
    """


def reservar_vaga(
    *, tenant_id: int, existentes: QuerySet[Any], limite: int, mensagem: str
) -> None:
    """Make room for one more of a tenant's rows, or raise LimiteDoTenant.

    Call it inside the transaction that then inserts the row:
    1. Lock the tenant's row FOR NO KEY UPDATE, the lock a submit takes for
       the pending cap (relatorios_submeter): two creates for one tenant
       queue here until the first commits, so two at limite-1 cannot both
       count limite-1. NO KEY: an insert that only references the tenant
       (its foreign key check is FOR KEY SHARE) does not wait for it.
    2. Count `existentes` (the tenant's rows the cap is about).
    """
    if not connection.in_atomic_block:
        raise RuntimeError("reservar_vaga needs the inserting transaction")
    list(
        Tenant.objects.select_for_update(no_key=True)
        .filter(pk=tenant_id)
        .values_list("pk", flat=True)
    )
    if existentes.count() >= limite:
        raise LimiteDoTenant(mensagem)


class IndicadorDeAntecipacao(models.Model):
    """A tenant's computing ahead over the last weeks, as the last pass of
    `jobs.antecipacao` measured it (the metrics, pages and admin read it)."""

    tenant = models.OneToOneField(
        Tenant, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    # Jobs computed ahead and settled (asked for, or expired or failed unasked).
    assentados = models.IntegerField(default=0)
    # Of those, asked for before they expired.
    aproveitados = models.IntegerField(default=0)
    # Jobs asked for (first requests), and those a job computed ahead
    # answered already finished.
    pedidos = models.IntegerField(default=0)
    imediatos = models.IntegerField(default=0)
    # Patterns stopped for their precision (RELATORIOS_ANTECIPAR_PRECISAO_MINIMA).
    padroes_parados = models.IntegerField(default=0)
    calculado_em = models.DateTimeField()

    class Meta:
        db_table = "relatorio_antecipacao"
        verbose_name = "indicador de antecipação"
        verbose_name_plural = "indicadores de antecipação"

    def __str__(self) -> str:
        return f"antecipação do tenant {self.tenant_id}"

    @property
    def precisao(self) -> float | None:
        return self.aproveitados / self.assentados if self.assentados else None

    @property
    def recall(self) -> float | None:
        return self.imediatos / self.pedidos if self.pedidos else None


class PadraoDesligado(models.Model):
    """A pattern of a tenant's requests its managers told computing ahead to
    leave alone (`jobs.antecipacao`): the report type, the period and the
    other parameters, as the pass names them."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    tipo = models.TextField()
    periodo = models.TextField(verbose_name="período")
    # The normalized parameters but the range (stores, grouping...).
    resto = models.JSONField()
    desligado_em = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "relatorio_padroes_desligados"
        verbose_name = "padrão não antecipado"
        verbose_name_plural = "padrões não antecipados"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "tipo", "periodo", "resto"],
                name="relatorio_padroes_desligados_unico",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tipo} {self.periodo} do tenant {self.tenant_id}"
