from relatorios.models.agendamentos import (
    Abertura,
    Agendamento,
    Alerta,
    EstadoOcorrencia,
    FormaDeEntrega,
    MotivoDoPulo,
    Ocorrencia,
    Periodo,
    PularEntrega,
    Recuperacao,
)
from relatorios.models.arquivos import Arquivo, JanelaDeDownload, LinkRevogado
from relatorios.models.clusters import Cluster
from relatorios.models.erp import Loja, MovimentoEstoque, Produto, Venda, Vendedor
from relatorios.models.eventos import EventoPublicado
from relatorios.models.jobs import (
    Desfecho,
    EstadoDoJob,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
)
from relatorios.models.limites import JanelaDaApi
from relatorios.models.notificacoes import (
    Entrega,
    EstadoEntrega,
    Evento,
    Inscricao,
    Webhook,
)
from relatorios.models.partes import ParteGuardada, ReusoDoTenant, VersaoErp
from relatorios.models.tenants import (
    IndicadorDeAntecipacao,
    LimiteDoTenant,
    PadraoDesligado,
    Tenant,
    Usuario,
    reservar_vaga,
)

__all__ = [
    "Abertura",
    "Agendamento",
    "Alerta",
    "Arquivo",
    "Cluster",
    "Desfecho",
    "Entrega",
    "EstadoDoJob",
    "EstadoEntrega",
    "EstadoOcorrencia",
    "Evento",
    "EventoPublicado",
    "FormaDeEntrega",
    "IndicadorDeAntecipacao",
    "Inscricao",
    "JanelaDaApi",
    "JanelaDeDownload",
    "LimiteDoTenant",
    "LinkRevogado",
    "Loja",
    "MotivoDoPulo",
    "MovimentoEstoque",
    "Ocorrencia",
    "PadraoDesligado",
    "ParteGuardada",
    "Periodo",
    "Produto",
    "PularEntrega",
    "Recuperacao",
    "RelatorioJob",
    "RelatorioParcial",
    "RelatorioTentativa",
    "ReusoDoTenant",
    "Tenant",
    "Usuario",
    "Venda",
    "Vendedor",
    "VersaoErp",
    "Webhook",
    "reservar_vaga",
]
