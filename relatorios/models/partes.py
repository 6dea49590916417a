"""Report chunks computed once and reused, and the ERP data versions that say
whether a stored chunk still holds (relatorios/jobs/reuso.py)."""

from __future__ import annotations

from django.db import models

from relatorios.models.tenants import Tenant

# The period of an ERP row, as SQL over the row (its UTC month), per table
# that has one; a table missing here has one version per tenant. The
# migration installing the triggers writes these expressions into them, and
# relatorios/jobs/reuso.py reads the versions of the months a chunk's
# timestamp range touches (a `date` column's month is always among them).
PERIODO_DA_LINHA: dict[str, str] = {
    "erp_vendas": "date_trunc('month', data_hora AT TIME ZONE 'UTC')::date",
    "erp_devolucoes": "date_trunc('month', data_hora AT TIME ZONE 'UTC')::date",
    "erp_movimentos_estoque": "date_trunc('month', data::timestamp)::date",
}
# Every ERP table carries the triggers (tests/reuso/test_versoes.py checks
# this list against the erp_* models).
TABELAS_VERSIONADAS = (
    "erp_lojas",
    "erp_vendedores",
    "erp_produtos",
    "erp_vendas",
    "erp_movimentos_estoque",
    "erp_devolucoes",
)
# The `mes` of a version that is not of a month: a table without dates (per
# tenant), and TRUNCATE's (tenant 0: every tenant's).
SEM_PERIODO = "0001-01-01"
TODOS_OS_TENANTS = 0


class VersaoErp(models.Model):
    """How many writing statements have touched one tenant's rows of one ERP
    table in one month; bumped by triggers in the writer's transaction."""

    id = models.BigAutoField(primary_key=True)
    # No foreign key: 0 is every tenant's (TRUNCATE), and a version must
    # outlive nothing it guards but never restart from 0 either.
    tenant_id = models.BigIntegerField()
    tabela = models.TextField()
    mes = models.DateField(verbose_name="mês")
    versao = models.BigIntegerField(verbose_name="versão")

    class Meta:
        db_table = "relatorio_versoes_erp"
        verbose_name = "versão dos dados do ERP"
        verbose_name_plural = "versões dos dados do ERP"
        constraints = [
            # The triggers' ON CONFLICT and relatorios_versoes_erp's lookups.
            models.UniqueConstraint(
                fields=["tenant_id", "tabela", "mes"],
                name="relatorio_versoes_erp_chave",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.tabela} {self.mes}: {self.versao}"


class ParteGuardada(models.Model):
    """One chunk's partial result, valid while the ERP versions it read hold."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, db_index=False, related_name="+"
    )
    tipo = models.TextField()
    # sha256 of what shapes the chunk: the type and its code, the tenant's
    # time zone, the parameters but the range, the chunk (reuso.chave).
    chave = models.TextField()
    parte = models.JSONField()
    # The JSON text as the type returned it: read back with the same key
    # order, so a reused chunk gives the same result text as a computed one.
    parcial = models.TextField()
    versoes = models.JSONField()
    tamanho = models.BigIntegerField()
    usos = models.BigIntegerField(default=0)
    criado_em = models.DateTimeField()
    usado_em = models.DateTimeField()

    class Meta:
        db_table = "relatorio_partes"
        verbose_name = "parte guardada"
        verbose_name_plural = "partes guardadas"
        constraints = [
            # The lookup and the store's ON CONFLICT.
            models.UniqueConstraint(
                fields=["tenant", "chave"], name="relatorio_partes_chave"
            )
        ]
        indexes = [
            # Eviction: the tenant's chunks by last use (reuso._DESPEJAR).
            # Retention scans the table: the budgets keep it small.
            models.Index(fields=["tenant", "usado_em"], name="relatorio_partes_uso"),
        ]

    def __str__(self) -> str:
        return f"{self.tipo} {self.parte}"


class ReusoDoTenant(models.Model):
    """A tenant's chunk reuse so far, for support's dashboard (one upsert per job)."""

    tenant = models.OneToOneField(
        Tenant, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    acertos = models.BigIntegerField(default=0)
    falhas = models.BigIntegerField(default=0)
    guardadas = models.BigIntegerField(default=0)
    despejadas = models.BigIntegerField(default=0)
    atualizado_em = models.DateTimeField()

    class Meta:
        db_table = "relatorio_reuso_tenants"
        verbose_name = "reuso do tenant"
        verbose_name_plural = "reuso dos tenants"

    def __str__(self) -> str:
        return f"{self.tenant_id}: {self.acertos}/{self.acertos + self.falhas}"
