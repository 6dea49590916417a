from relatorios.models.agendamentos import (
    Agendamento,
    Alerta,
    Canal,
    Cluster,
    Entrega,
    EstadoEntrega,
    EstadoOcorrencia,
    Evento,
    Inscricao,
    Ocorrencia,
    Periodo,
    Recuperacao,
    Webhook,
)
from relatorios.models.erp import Loja, MovimentoEstoque, Produto, Venda, Vendedor
from relatorios.models.jobs import (
    Desfecho,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
    Status,
)
from relatorios.models.limites import JanelaDaApi
from relatorios.models.tenants import Tenant, Usuario

__all__ = [
    "Agendamento",
    "Alerta",
    "Canal",
    "Cluster",
    "Desfecho",
    "Entrega",
    "EstadoEntrega",
    "EstadoOcorrencia",
    "Evento",
    "Inscricao",
    "JanelaDaApi",
    "Loja",
    "MovimentoEstoque",
    "Ocorrencia",
    "Periodo",
    "Produto",
    "Recuperacao",
    "RelatorioJob",
    "RelatorioParcial",
    "RelatorioTentativa",
    "Status",
    "Tenant",
    "Usuario",
    "Venda",
    "Vendedor",
    "Webhook",
]
