"""Sample ERP data the reports read. Every row belongs to one tenant."""

from __future__ import annotations

from django.db import models

from relatorios.models.tenants import Tenant


class Loja(models.Model):
    """A store of a tenant, known to its users by `codigo`."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, db_index=False, related_name="lojas"
    )
    codigo = models.CharField(max_length=32, verbose_name="código")
    nome = models.CharField(max_length=200)

    class Meta:
        db_table = "erp_lojas"
        ordering = ["codigo"]
        constraints = [
            # Also the index behind the submit's store-code check.
            models.UniqueConstraint(
                fields=["tenant", "codigo"], name="erp_lojas_tenant_codigo_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.codigo} {self.nome}"


class Vendedor(models.Model):
    """A salesperson with a commission rate (0.0350 = 3.5% of revenue)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="vendedores"
    )
    nome = models.CharField(max_length=200)
    taxa_comissao = models.DecimalField(
        max_digits=5, decimal_places=4, verbose_name="taxa de comissão"
    )

    class Meta:
        db_table = "erp_vendedores"
        verbose_name_plural = "vendedores"

    def __str__(self) -> str:
        return self.nome


class Produto(models.Model):
    """A product sold and stocked by the tenant's stores."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, db_index=False, related_name="produtos"
    )
    sku = models.CharField(max_length=32)
    nome = models.CharField(max_length=200)
    preco = models.DecimalField(max_digits=12, decimal_places=2, verbose_name="preço")

    class Meta:
        db_table = "erp_produtos"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "sku"], name="erp_produtos_tenant_sku_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.sku} {self.nome}"


class Venda(models.Model):
    """One sale line: a quantity of a product sold by a seller in a store."""

    id = models.BigAutoField(primary_key=True)
    # Foreign keys without their own indexes: the reports read sales by tenant
    # and period, and every extra index slows the bulk load of millions of rows.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)
    loja = models.ForeignKey(Loja, on_delete=models.CASCADE, db_index=False)
    vendedor = models.ForeignKey(Vendedor, on_delete=models.CASCADE, db_index=False)
    produto = models.ForeignKey(Produto, on_delete=models.CASCADE, db_index=False)
    data_hora = models.DateTimeField()
    quantidade = models.IntegerField()
    valor = models.DecimalField(max_digits=14, decimal_places=2)

    class Meta:
        db_table = "erp_vendas"
        indexes = [
            # vendas and comissoes: WHERE tenant_id = %s AND data_hora in [inicio, fim).
            models.Index(fields=["tenant", "data_hora"], name="erp_vendas_tenant_data")
        ]

    def __str__(self) -> str:
        return f"venda {self.pk}"


class MovimentoEstoque(models.Model):
    """A stock movement of a product in a store: positive in, negative out."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)
    loja = models.ForeignKey(Loja, on_delete=models.CASCADE, db_index=False)
    produto = models.ForeignKey(Produto, on_delete=models.CASCADE, db_index=False)
    data = models.DateField()
    quantidade = models.IntegerField()

    class Meta:
        db_table = "erp_movimentos_estoque"
        verbose_name = "movimento de estoque"
        verbose_name_plural = "movimentos de estoque"
        indexes = [
            # estoque, one chunk per store:
            # WHERE tenant_id = %s AND loja_id = %s AND data <= fim.
            models.Index(
                fields=["tenant", "loja", "data"], name="erp_movimentos_loja_data"
            )
        ]

    def __str__(self) -> str:
        return f"movimento {self.pk}"


class Devolucao(models.Model):
    """Goods of a sale line brought back to a store (any of the tenant's) and
    refunded: the monthly close subtracts them from revenue."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)
    loja = models.ForeignKey(Loja, on_delete=models.CASCADE, db_index=False)
    venda = models.ForeignKey(Venda, on_delete=models.CASCADE, db_index=False)
    data_hora = models.DateTimeField()
    quantidade = models.IntegerField()
    valor = models.DecimalField(max_digits=14, decimal_places=2)

    class Meta:
        db_table = "erp_devolucoes"
        verbose_name = "devolução"
        verbose_name_plural = "devoluções"
        indexes = [
            # fechamento: WHERE tenant_id = %s AND data_hora in [two months).
            models.Index(
                fields=["tenant", "data_hora"], name="erp_devolucoes_tenant_data"
            )
        ]

    def __str__(self) -> str:
        return f"devolução {self.pk}"
