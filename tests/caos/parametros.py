"""What one soak run is: its length, its seed, its shape, and the knobs of the
deployment it starts (the same in the harness and in every child process)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests import processos

# The deployment's knobs: the tests' fast clock (heartbeat, sweep, backoff)
# and crons with seconds, so that a minute of soak holds many firings,
# deadlines and recoveries. Each one is read from the environment by
# config/settings.py, here and in every web server and cluster.
AJUSTES = {
    "RELATORIOS_BATIMENTO_S": "0.5",
    # Longer than the tests' 4 s: on a loaded 2-core host a live worker must
    # never look dead. SIGSTOPs are drawn on both sides of it.
    "RELATORIOS_ORFAO_APOS_S": "6",
    "RELATORIOS_VARREDURA_S": "0.5",
    "RELATORIOS_CLUSTER_BATIMENTO_S": "0.5",
    "RELATORIOS_AGENDADOR_S": "0.5",
    "RELATORIOS_BACKOFF_S": "0.2",
    "RELATORIOS_BACKOFF_MAX_S": "2",
    "RELATORIOS_MAX_TENTATIVAS": "6",
    "RELATORIOS_REENFILEIRAR_APOS_S": "3",
    "RELATORIOS_DESLIGAMENTO_S": "2",
    # The delivery lease is 2 x webhook timeout + email timeout + the file's
    # build bound + this margin (vagas.prazo_de_envio_s): 15 s, so a killed
    # sender's delivery (and the tenant's slot it holds) is retried within
    # the soak's drain. With the build bound's default (120 s) it is 130 s:
    # a 60 s run then spent 120 s draining two chat deliveries whose sender
    # a kill -9 had taken.
    "RELATORIOS_MARGEM_HARD_STOP_S": "3",
    "RELATORIOS_ARQUIVO_GERACAO_MAX_S": "5",
    "RELATORIOS_WEBHOOK_TIMEOUT_S": "2",
    "EMAIL_TIMEOUT": "3",
    "RELATORIOS_VALIDADE_S": "20",
    "RELATORIOS_MAX_PENDENTES_POR_TENANT": "6",
    "RELATORIOS_MAX_EXECUTANDO_POR_TENANT": "2",
    # Two deliveries of a tenant in flight at once (the default is one).
    "RELATORIOS_MAX_ENTREGAS_POR_TENANT": "2",
    "RELATORIOS_CRON_SEGUNDOS": "1",
    "RELATORIOS_INTERVALO_MINIMO_MIN": "0",
    # A firing found more than this late is missed (catch-up policy): the
    # "scheduler late" fault stalls every scheduler for longer than this.
    "RELATORIOS_DISPARO_TOLERANCIA_S": "4",
    "RELATORIOS_WEBHOOK_PERMITIR_LOCAL": "1",
    # Links are absolute, as in production: a chat message carries one only
    # then (and the soak matches chat messages to deliveries by it).
    "RELATORIOS_URL_BASE": "https://relatorios.caos.exemplo",
    "RELATORIOS_ENTREGA_BACKOFF_S": "0.3",
    "RELATORIOS_ENTREGA_BACKOFF_MAX_S": "2",
    "RELATORIOS_ENTREGA_MAX_TENTATIVAS": "8",
    "RELATORIOS_REPLICA_ESPERA_S": "1",
    "RELATORIOS_WORKERS": "2",
    "WEB_WORKERS": "2",
    "Q_POLL_S": "0.1",
    "LOG_FORMAT": "texto",
    # The ledger type's chunk (teste_razao): a pause this long, then a count.
    "RELATORIOS_TESTE_PAUSA_S": "0.2",
}
TIPOS = processos.TIPOS_DE_TESTE + ",tests.caos.razao.Razao"
# The application_name prefix of the ledger's connections (razao.py); here,
# with no Django import, so the driver can name them before Django is set up.
PREFIXO_DA_RAZAO = "caos-razao"


@dataclass(frozen=True)
class Parametros:
    """One run. `duracao_s` is the load's length: its first `calma` part has
    no faults (the reference figures), the rest has the injector running."""

    duracao_s: float
    semente: int
    saida: Path
    replica: bool = True
    webs: int = 2
    clusters: int = 3
    calma: float = 0.2
    # Mean seconds between the start of two faults.
    intervalo_medio_s: float = 3.0
    # After the load: how long everything may take to become final.
    limite_final_s: float = 180.0
    taxa_de_500: float = 0.2
    # Growth of a long-lived process's RSS allowed between the second fifth
    # of the run and its last fifth.
    rss_limite_mb: float = 48.0
    manter: bool = False
    # Fault kinds to leave out (names of falhas.FALHAS).
    sem_falhas: frozenset[str] = field(default_factory=frozenset)

    @property
    def calma_s(self) -> float:
        return self.duracao_s * self.calma

    @property
    def caos_s(self) -> float:
        return self.duracao_s - self.calma_s

    def ajuste(self, nome: str) -> float:
        return float(AJUSTES[nome])
