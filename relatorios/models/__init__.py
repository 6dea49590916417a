from relatorios.models.erp import Loja, MovimentoEstoque, Produto, Venda, Vendedor
from relatorios.models.jobs import RelatorioJob, Status
from relatorios.models.tenants import Tenant, Usuario

__all__ = [
    "Loja",
    "MovimentoEstoque",
    "Produto",
    "RelatorioJob",
    "Status",
    "Tenant",
    "Usuario",
    "Venda",
    "Vendedor",
]
