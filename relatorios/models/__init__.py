from relatorios.models.erp import Loja, MovimentoEstoque, Produto, Venda, Vendedor
from relatorios.models.jobs import (
    Desfecho,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
    Status,
)
from relatorios.models.tenants import Tenant, Usuario

__all__ = [
    "Desfecho",
    "Loja",
    "MovimentoEstoque",
    "Produto",
    "RelatorioJob",
    "RelatorioParcial",
    "RelatorioTentativa",
    "Status",
    "Tenant",
    "Usuario",
    "Venda",
    "Vendedor",
]
