"""Prometheus metrics: what happened (counters, histograms) and what is (gauges).

Two kinds, for two reasons:

- Events are counted where they happen, in whichever process: a web
  worker (submits, 429s), a cluster worker (a job finished, its duration),
  the cluster's supervisor (orphans recovered, lost messages re-enqueued).
  prometheus_client's multiprocess mode keeps each process's values in a
  file of the server's folder (config/metricas_dir.py) and a scrape sums
  them, so a worker that was recycled still counts.
- State is read from the database at scrape time (`EstadoDoBanco`): jobs
  pending and running, the oldest pending, stuck jobs, open alerts, cluster
  liveness, the read replica as a cluster last saw it. The database is the
  truth shared by every host; a gauge kept in one process would only know
  that process's part. One statement per group, each bounded by a partial
  index, so a scrape stays cheap with millions of finished jobs. A scrape
  reads only the primary: nothing it waits on can go silent without the
  whole service being down.

Labels are bounded: `tipo` is one of the registered report types (anything
else is "outro"), the others are fixed enumerations. No job or schedule id is
ever a label, and a tenant's only in computing ahead's gauges (issue 34 asks
for its precision and recall per tenant): one series per tenant with it on,
read from relatorio_antecipacao, a row per tenant. Any other per-tenant view
is a query in the admin.

Who may scrape, and how a scrape is served (the web's /metrics, a cluster's
own port): `operacao.exposicao`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponseBase
from django_prometheus.middleware import Metrics
from django_prometheus.utils import Time, TimeSince
from prometheus_client import (
    Counter,
    Gauge,
    Histogram,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from relatorios import tipos
from relatorios.banco import replica
from relatorios.fila import clusters

logger = logging.getLogger(__name__)

# --- Events (any process) ----------------------------------------------------------

SUBMISSOES = Counter(
    "relatorios_submissoes",
    "Report requests by outcome: novo (a job was created), reaproveitado (an "
    "existing pending, running or valid job answered), reiniciado (a failed or "
    "expired job started over), rejeitado (400 for the parameters, 429 for the "
    "tenant's pending cap). Submits of computing ahead are not requests and "
    "are not counted.",
    ["tipo", "desfecho"],
)
FINALIZADOS = Counter(
    "relatorios_jobs_finalizados",
    "Jobs that reached a final status (pronto or falhou).",
    ["tipo", "status"],
)
# Reports run from a fraction of a second to the 5-minute statement timeout.
DURACAO = Histogram(
    "relatorios_job_duracao_segundos",
    "One attempt's time from its claim to its end, whatever the outcome.",
    ["tipo"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
)
ESPERA = Histogram(
    "relatorios_job_espera_segundos",
    "Time from the request (or restart) to the first attempt's start.",
    ["tipo"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600),
)
RETENTATIVAS = Counter(
    "relatorios_retentativas",
    "Attempts that failed for a transient reason and were scheduled again.",
    ["tipo"],
)
TIMEOUTS = Counter(
    "relatorios_timeouts",
    "Attempts stopped by a time limit: the statement timeout (consulta) or "
    "django-q2's hard stop (parada_forcada).",
    ["tipo", "limite"],
)
ORFAOS = Counter(
    "relatorios_orfaos_recuperados",
    "Running jobs whose worker stopped beating, taken back by the sweep: "
    "pendente (retried) or falhou (attempts exhausted).",
    ["desfecho"],
)
REENFILEIRADOS = Counter(
    "relatorios_mensagens_reenfileiradas",
    "Pending jobs whose queue message was lost and that got a new one.",
)
DEVOLVIDOS = Counter(
    "relatorios_jobs_devolvidos",
    "Running jobs handed back to pendente by a cluster that was stopping.",
)
RECUSAS_429 = Counter(
    "relatorios_recusas_429",
    "Requests answered 429: limite_api (requests per token per window) or "
    "limite_pendentes (the tenant's pending cap).",
    ["motivo"],
)
ENTREGAS = Counter(
    "relatorios_entregas_finalizadas",
    "Notifications that reached a final state: entregue, or falhou after "
    "their last attempt; `assunto` is what they were about (job, alerta, "
    "agendamento: a scheduled report for its recipients).",
    ["canal", "estado", "assunto"],
)
ENTREGAS_TENTATIVAS_FALHAS = Counter(
    "relatorios_entregas_tentativas_falhas",
    "Delivery attempts that failed (a retry may still succeed).",
    ["canal"],
)
EMAILS_ACIMA_DA_COTA = Counter(
    "relatorios_emails_acima_da_cota",
    "Emails not sent because their tenant reached "
    "RELATORIOS_MAX_EMAILS_POR_TENANT_DIA (written falhou, resendable).",
)
ARQUIVOS_GERADOS = Histogram(
    "relatorios_arquivos_gerados_segundos",
    "Files built from a finished result (once per result, then stored), by "
    "format: how long each build took.",
    ["formato"],
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
ALERTAS_ABERTOS = Counter(
    "relatorios_alertas_abertos_eventos",
    "Absence alerts opened (a scheduled report not pronto by its deadline).",
)
LEITURAS = Counter(
    "relatorios_leituras_de_relatorio",
    "Attempts by where their report SQL ran, with a replica configured: "
    "onde=replica (motivo em_dia), or onde=primario and why (atrasada: not "
    "caught up within RELATORIOS_REPLICA_ESPERA_S; indisponivel; "
    "nao_e_replica or outro_servidor: refused).",
    ["onde", "motivo"],
)
PARTES = Counter(
    "relatorios_partes",
    "Report chunks and the chunk store (relatorios/jobs/reuso.py), by type: "
    "desfecho=acerto (reused), falha (computed: none stored, or its ERP "
    "versions changed), guardada (stored), despejada (evicted: the tenant's "
    "RELATORIOS_REUSO_ORCAMENTO_BYTES), recusada (larger than the budget), "
    "erro (the store failed or was unavailable: computed instead). The "
    "per-tenant view, with bytes, is the operations dashboard's.",
    ["tipo", "desfecho"],
)
EXECUTANDO_AQUI = Gauge(
    "relatorios_worker_jobs_executando",
    "Jobs running right now in this server's worker processes.",
    multiprocess_mode="livesum",
)


def rotulo_do_tipo(tipo: str) -> str:
    """The tipo as a label: a registered type, or "outro" (bounded)."""
    return tipo if tipo in tipos.registro() else "outro"


def submissao(*, tipo: str, desfecho: str) -> None:
    SUBMISSOES.labels(rotulo_do_tipo(tipo), desfecho).inc()


def job_terminado(
    *, tipo: str, desfecho: str, duracao_s: float, timeout: str | None = None
) -> None:
    """One attempt ended; `desfecho` is execucao's (pronto, falhou, adiado, ...)."""
    rotulo = rotulo_do_tipo(tipo)
    DURACAO.labels(rotulo).observe(duracao_s)
    if desfecho in ("pronto", "falhou"):
        FINALIZADOS.labels(rotulo, desfecho).inc()
    elif desfecho == "adiado":
        RETENTATIVAS.labels(rotulo).inc()
    elif desfecho == "desligamento":
        DEVOLVIDOS.inc()
    if timeout is not None:
        TIMEOUTS.labels(rotulo, timeout).inc()


def job_iniciado(*, tipo: str, espera_s: float | None) -> None:
    if espera_s is not None:
        ESPERA.labels(rotulo_do_tipo(tipo)).observe(max(0.0, espera_s))


def orfaos(*, tipos_e_status: Iterable[tuple[str, str]]) -> None:
    for tipo, status in tipos_e_status:
        ORFAOS.labels(status).inc()
        if status == "falhou":
            FINALIZADOS.labels(rotulo_do_tipo(tipo), "falhou").inc()


def reenfileirados(n: int) -> None:
    if n:
        REENFILEIRADOS.inc(n)


def recusa_429(motivo: str) -> None:
    RECUSAS_429.labels(motivo).inc()


_ASSUNTOS = frozenset({"job", "alerta", "alertas", "agendamento"})


def entrega(*, canal: str, evento: str, estado: str | None, ok: bool) -> None:
    """`canal`: a registered channel's name (notificacoes.canais, whose
    sender is the only caller): a bounded set of label values."""
    rotulo = canal
    assunto = evento.split(".", 1)[0]
    if not ok:
        ENTREGAS_TENTATIVAS_FALHAS.labels(rotulo).inc()
    if estado in ("entregue", "falhou"):
        ENTREGAS.labels(
            rotulo, estado, assunto if assunto in _ASSUNTOS else "outro"
        ).inc()


def emails_acima_da_cota(n: int) -> None:
    EMAILS_ACIMA_DA_COTA.inc(n)


def arquivo_gerado(*, formato: str, segundos: float) -> None:
    ARQUIVOS_GERADOS.labels(formato).observe(segundos)


def alerta_aberto() -> None:
    ALERTAS_ABERTOS.inc()


def leitura_de_relatorio(*, onde: str, motivo: str) -> None:
    LEITURAS.labels(onde, motivo).inc()


def partes(*, tipo: str, desfecho: str, n: int = 1) -> None:
    if n:
        PARTES.labels(rotulo_do_tipo(tipo), desfecho).inc(n)


# --- State (read from the database at scrape time) -------------------------------

# Each subquery matches one partial index (relatorio_jobs_fila,
# relatorio_jobs_executando): a scrape never reads finished jobs.
_SQL_JOBS = """
SELECT (SELECT count(*) FROM relatorio_jobs WHERE status = 'pendente'),
       (SELECT count(*) FROM relatorio_jobs
         WHERE status = 'pendente' AND enfileirado_em IS NULL),
       (SELECT extract(epoch FROM now() - min(criado_em))
          FROM relatorio_jobs WHERE status = 'pendente'),
       (SELECT count(*) FROM relatorio_jobs WHERE status = 'executando'),
       (SELECT count(*) FROM relatorio_jobs
         WHERE status = 'executando'
           AND heartbeat_em < now() - make_interval(secs => %(orfao)s)),
       (SELECT count(*) FROM (SELECT 1 FROM relatorio_jobs
                               WHERE status = 'executando'
                               GROUP BY tenant_id
                              HAVING count(*) >= %(limite)s) AS no_limite)
"""

# Open alerts (relatorio_alertas_abertos), occurrences past their deadline the
# checker has not settled yet (relatorio_ocorr_a_conferir), and the oldest
# "last success" among active schedules: per schedule, its newest pronto
# occurrence (the unique (agendamento, planejado_para) index), or its
# activation if it never succeeded. One number, not one series per schedule.
_SQL_AGENDAMENTOS = """
SELECT (SELECT count(*) FROM relatorio_alertas WHERE fechado_em IS NULL),
       (SELECT count(*) FROM relatorio_ocorrencias
         WHERE NOT conferida AND prazo_em < now()),
       (SELECT extract(epoch FROM min(coalesce(u.ultimo, a.ativo_desde)))
          FROM relatorio_agendamentos a
          CROSS JOIN LATERAL (
                SELECT max(j.concluido_em) AS ultimo
                  FROM relatorio_ocorrencias o
                  JOIN relatorio_jobs j ON j.id = o.job_id AND j.status = 'pronto'
                 WHERE o.agendamento_id = a.id) AS u
         WHERE a.ativo AND a.excluido_em IS NULL),
       (SELECT count(*) FROM relatorio_agendamentos
         WHERE ativo AND excluido_em IS NULL),
       (SELECT count(*) FROM relatorio_agendamentos a
         WHERE a.ativo AND a.excluido_em IS NULL
           AND (SELECT count(*) FILTER (WHERE u.entregue_como = 'link'
                                          AND b.aberta IS NULL)
                  FROM (SELECT o.id, o.entregue_como
                          FROM relatorio_ocorrencias o
                         WHERE o.agendamento_id = a.id AND o.entregue_em IS NOT NULL
                         ORDER BY o.entregue_em DESC, o.id DESC
                         LIMIT %(sem_leitura)s) AS u
                  LEFT JOIN LATERAL (
                        SELECT true AS aberta FROM relatorio_aberturas b
                         WHERE b.ocorrencia_id = u.id LIMIT 1) AS b ON true)
               = %(sem_leitura)s)
"""

# Active schedules whose last SEM_LEITURA deliveries were all links nobody
# opened: the rule of agendamentos.aberturas (which this layer may not
# import), per active schedule its last few delivered occurrences
# (relatorio_ocorr_entregues) each looked up in relatorio_aberturas_unica,
# so a scrape reads a few index entries per active schedule.
SEM_LEITURA = 3

# Computing ahead, per tenant, as its last pass measured it (jobs.antecipacao).
_SQL_ANTECIPACAO = """
SELECT tenant_id, assentados, aproveitados, pedidos, imediatos, padroes_parados
  FROM relatorio_antecipacao ORDER BY tenant_id
"""

# Pending deliveries (relatorio_entregas_pendentes) and how long the oldest waits.
_SQL_ENTREGAS = """
SELECT count(*), extract(epoch FROM now() - min(criado_em))
  FROM relatorio_entregas WHERE estado = 'pendente'
"""


def _gauge(nome: str, documentacao: str, valor: Any) -> GaugeMetricFamily:
    # Never (no pending job, no cluster ever) is +Inf for an age: "older than
    # any threshold", which is what an alert on it should read.
    numero = float("inf") if valor is None else float(valor)
    return GaugeMetricFamily(nome, documentacao, value=numero)


class EstadoDoBanco(Collector):
    """The gauges read from the database, one statement per group."""

    def collect(self) -> Iterator[Metric]:
        try:
            metricas = list(self._ler())
        except DatabaseError:
            logger.warning("métricas: banco indisponível", exc_info=True)
            yield _gauge(
                "relatorios_estado_coletado",
                "1 if the database-backed gauges were read in this scrape.",
                0,
            )
            return
        yield from metricas
        yield _gauge(
            "relatorios_estado_coletado",
            "1 if the database-backed gauges were read in this scrape.",
            1,
        )

    def _ler(self) -> Iterator[Metric]:
        with connection.cursor() as cursor:
            cursor.execute(
                _SQL_JOBS,
                {
                    "orfao": settings.RELATORIOS_ORFAO_APOS_S,
                    "limite": settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT,
                },
            )
            pendentes, sem_vaga, mais_antigo, executando, travados, no_limite = (
                cursor.fetchone()
            )
            cursor.execute(_SQL_AGENDAMENTOS, {"sem_leitura": SEM_LEITURA})
            (abertos, atrasadas, ultimo_sucesso, agendamentos_ativos, sem_leitura) = (
                cursor.fetchone()
            )
            cursor.execute(_SQL_ENTREGAS)
            entregas_pendentes, entrega_mais_antiga = cursor.fetchone()
            cursor.execute(_SQL_ANTECIPACAO)
            antecipacao = cursor.fetchall()
        saude = clusters.saude()

        jobs = GaugeMetricFamily(
            "relatorios_jobs",
            "Jobs still owing an answer, by status (finished ones are counted "
            "by relatorios_jobs_finalizados_total).",
            labels=["status"],
        )
        jobs.add_metric(["pendente"], pendentes)
        jobs.add_metric(["executando"], executando)
        yield jobs
        yield _gauge(
            "relatorios_jobs_aguardando_vaga",
            "Pending jobs without a queue message: their tenant is at its "
            "running limit.",
            sem_vaga,
        )
        yield _gauge(
            "relatorios_pendente_mais_antigo_segundos",
            "Age of the oldest pending job (0 when none).",
            mais_antigo or 0,
        )
        yield _gauge(
            "relatorios_jobs_travados",
            "Running jobs whose heartbeat is older than RELATORIOS_ORFAO_APOS_S "
            "(the sweep should take them back: non-zero for long means no sweep).",
            travados,
        )
        yield _gauge(
            "relatorios_tenants_no_limite",
            "Tenants running RELATORIOS_MAX_EXECUTANDO_POR_TENANT jobs at once.",
            no_limite,
        )
        yield _gauge(
            "relatorios_alertas_abertos",
            "Absence alerts not closed: scheduled reports that missed their deadline.",
            abertos,
        )
        yield _gauge(
            "relatorios_ocorrencias_atrasadas",
            "Scheduled occurrences past their deadline that the checker has not "
            "settled yet (grows when no checker runs).",
            atrasadas,
        )
        yield _gauge(
            "relatorios_agendamentos_ativos",
            "Active schedules.",
            agendamentos_ativos,
        )
        yield _gauge(
            "relatorios_agendamentos_sem_leitura",
            "Active schedules whose last 3 deliveries, all sent as links, nobody "
            "opened (flagged to their managers; attachments never count).",
            sem_leitura,
        )
        yield _gauge(
            "relatorios_agendamento_ultimo_sucesso_timestamp",
            "Unix time of the oldest 'last pronto report' among active schedules "
            "(activation time for one that never succeeded; 0 when none).",
            ultimo_sucesso or 0,
        )
        yield _gauge(
            "relatorios_entregas_pendentes",
            "Notifications (webhooks, emails) not yet delivered nor given up.",
            entregas_pendentes,
        )
        yield _gauge(
            "relatorios_entrega_pendente_mais_antiga_segundos",
            "Age of the oldest pending notification (0 when none).",
            entrega_mais_antiga or 0,
        )
        yield _gauge(
            "relatorios_cluster_batimento_idade_segundos",
            "Seconds since the newest heartbeat of a running cluster (+Inf: none).",
            saude["cluster_batimento_idade_s"],
        )
        yield _gauge(
            "relatorios_verificador_idade_segundos",
            "Seconds since any cluster's checker of absence alerts finished a "
            "pass (+Inf: never).",
            saude["verificador_idade_s"],
        )
        yield _gauge(
            "relatorios_clusters_vivos",
            "Clusters that beat within RELATORIOS_ORFAO_APOS_S.",
            saude["clusters_vivos"],
        )
        yield from _antecipacao(antecipacao)
        if replica.configurada():
            yield from _replica(clusters.replica_vista())


def _antecipacao(linhas: list[tuple[Any, ...]]) -> Iterator[Metric]:
    """Computing ahead's precision and recall per tenant (the last 28 days);
    a tenant with nothing settled or asked has no sample of that ratio."""
    precisao = GaugeMetricFamily(
        "relatorios_antecipacao_precisao",
        "Share of the results computed ahead (settled in the last 28 days) that "
        "someone asked for before they expired, per tenant.",
        labels=["tenant"],
    )
    recall = GaugeMetricFamily(
        "relatorios_antecipacao_recall",
        "Share of the reports asked for in the last 28 days (first requests) "
        "that a result computed ahead answered at once, per tenant.",
        labels=["tenant"],
    )
    parados = GaugeMetricFamily(
        "relatorios_antecipacao_padroes_parados",
        "Patterns no longer computed ahead for their precision "
        "(RELATORIOS_ANTECIPAR_PRECISAO_MINIMA), per tenant.",
        labels=["tenant"],
    )
    for tenant_id, assentados, aproveitados, pedidos, imediatos, n in linhas:
        rotulo = [str(tenant_id)]
        if assentados:
            precisao.add_metric(rotulo, aproveitados / assentados)
        if pedidos:
            recall.add_metric(rotulo, imediatos / pedidos)
        parados.add_metric(rotulo, n)
    yield precisao
    yield recall
    yield parados


def _replica(vista: clusters.ReplicaVista | None) -> Iterator[Metric]:
    """The replica's gauges, when one is configured (RELATORIOS_REPLICA_URL):
    as a cluster last saw it (`clusters.replica_vista`), never asked here."""
    yield _gauge(
        "relatorios_replica_observada_idade_segundos",
        "Seconds since a cluster last looked at the replica, which the other "
        "relatorios_replica_* gauges report (+Inf: no cluster ever looked).",
        None if vista is None else vista.idade_s,
    )
    if vista is None:
        return
    estado = vista.estado
    yield _gauge(
        "relatorios_replica_disponivel",
        "1 if the replica answered a cluster, is in recovery and is this "
        "primary's standby (same system identifier); 0 if reports cannot read "
        "there.",
        1 if estado.disponivel else 0,
    )
    if not estado.disponivel:
        return  # no lag to speak of: RelatoriosReplicaRecusada says why
    yield _gauge(
        "relatorios_replica_atraso_bytes",
        "WAL the primary has written that the replica has not replayed yet.",
        estado.atraso_bytes,
    )
    yield _gauge(
        "relatorios_replica_atraso_segundos",
        "Age of the last transaction the replica replayed, 0 when it has "
        "replayed everything.",
        estado.atraso_s,
    )


# --- HTTP (django-prometheus) ------------------------------------------------------


class MetricasHttp:
    """django-prometheus' series, two of its ~15 updates per request.

    Its pair of middlewares counts each request in about fifteen series
    (by method, by transport, body sizes, charset, latency before and after
    the other middlewares...): measured here, 300 µs of CPU on a 1.9 ms status
    poll in multiprocess mode. This one, first in MIDDLEWARE, keeps responses
    by status, view and method and the latency by view and method (all the
    middlewares included), the series the dashboard reads, with the same
    names, and exceptions by type. A plain middleware (one call, no
    per-view hooks): it is a layer of every request, the API's included.
    """

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.metrics = Metrics.get_instance()

    def __call__(self, request: HttpRequest) -> Any:
        inicio = Time()
        # Django's layer under this one turns an exception into a response,
        # so every answer is counted here.
        response = self.get_response(request)
        contar_resposta(self.metrics, request, response, inicio)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        # Only the count: the response Django makes of it passes above.
        self.metrics.exceptions_by_type.labels(type=type(exception).__name__).inc()


# The methods django-prometheus labels by name; any other is one label value.
_METODOS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "OPTIONS", "CONNECT", "PATCH"}
)


def metodo_do_pedido(request: HttpRequest) -> str:
    """The `method` label: django-prometheus' values, bounded."""
    metodo = request.method
    return metodo if metodo in _METODOS else "<invalid method>"


def nome_da_view(request: HttpRequest) -> str:
    """The `view` label: the URL pattern's view name, as django-prometheus has it."""
    rota = getattr(request, "resolver_match", None)
    if rota is None or rota.view_name is None:
        return "<unnamed view>"
    return str(rota.view_name)


def contar_resposta(
    metricas: Any, request: HttpRequest, response: HttpResponseBase, inicio: Any
) -> None:
    """One response in django-prometheus' series by status, view and method,
    and its latency since `inicio` (a `Time()`), if given."""
    metodo = metodo_do_pedido(request)
    view = nome_da_view(request)
    respostas = metricas.responses_by_status_view_method
    chave: tuple[Any, ...] = (respostas, response.status_code, view, metodo)
    filho = _filhos.get(chave)
    if filho is None:
        filho = respostas.labels(
            status=str(response.status_code), view=view, method=metodo
        )
        _filhos[chave] = filho
    filho.inc()
    if inicio is not None:
        latencia = metricas.requests_latency_by_view_method
        chave = (latencia, view, metodo)
        filho = _filhos.get(chave)
        if filho is None:
            filho = _filhos[chave] = latencia.labels(view=view, method=metodo)
        filho.observe(TimeSince(inicio))


# (metric, label values...) -> its labelled child: `labels()` validates and
# looks the values up under a lock on every call; the values are bounded
# (status codes x named views x nine methods), so the children are kept.
# Keyed by the metric object too, so a re-registered metric gets new ones.
_filhos: dict[tuple[Any, ...], Any] = {}
