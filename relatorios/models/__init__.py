from relatorios.models.erp import Loja, MovimentoEstoque, Produto, Venda, Vendedor
from relatorios.models.jobs import Desfecho, RelatorioJob, RelatorioTentativa, Status
from relatorios.models.tenants import Tenant, Usuario

__all__ = [
    "Desfecho",
    "Loja",
    "MovimentoEstoque",
    "Produto",
    "RelatorioJob",
    "RelatorioTentativa",
    "Status",
    "Tenant",
    "Usuario",
    "Venda",
    "Vendedor",
]
