"""The operations dashboard's reads: one aggregate statement each.

Every statement is bounded twice, by a time window and by an index that
starts at that window, so its cost follows the work done in the window and
not the years of history behind it (docs/benchmarks.md, B4 dashboard):

- finished jobs per hour: `relatorio_jobs_concluidos` (finished jobs by
  `concluido_em`, with their status, an index-only scan);
- failures by reason: `relatorio_jobs_falhos` (failed jobs by `concluido_em`);
- the queue: the pending-only and running-only partial indexes;
- occurrences per day: `relatorio_ocorr_planejadas` (by `planejado_para`),
  each one's alert by its unique `ocorrencia_id`;
- tenants by jobs: `relatorio_jobs_criado`; by worker time: the attempts
  ledger's `relatorio_tentativas_inicio`, each attempt's job by its key.

Hours are cut in the database session's zone (UTC: Django sets it), so a
change of daylight saving time never makes an hour of 0 or 120 minutes; days
are the dashboard's zone's (`fuso`, `fuso_da_maioria`). Aggregation happens
here, in SQL; Python only shapes the few rows for the charts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.db import connection

from relatorios.models import Cluster, relogio


def fuso_da_maioria() -> str:
    """The zone most tenants use: the dashboard's clock across tenants, so
    support reads the hours most managers read (Brasília's when none)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT fuso_horario FROM tenants GROUP BY 1 ORDER BY count(*) DESC, 1 "
            "LIMIT 1"
        )
        linha = cursor.fetchone()
    return str(linha[0]) if linha else relogio.BRASILIA


@dataclass(frozen=True)
class Hora:
    """Jobs that finished within one hour, by status."""

    inicio: datetime
    prontos: int
    falhos: int


def concluidos_por_hora(*, horas: int) -> list[Hora]:
    """The last `horas` hours (the current one included), oldest first, zeros
    included: jobs by the hour of their `concluido_em`, `pronto` or `falhou`.

    A job's row keeps its latest finish only: one restarted after its result
    expired counts once, when it finished again."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH horas AS (
                SELECT generate_series(
                           date_trunc('hour', now())
                           - (%(horas)s - 1) * interval '1 hour',
                           date_trunc('hour', now()),
                           interval '1 hour') AS hora
            ), contagem AS (
                SELECT date_trunc('hour', concluido_em) AS hora,
                       count(*) FILTER (WHERE status = 'pronto') AS prontos,
                       count(*) FILTER (WHERE status = 'falhou') AS falhos
                  FROM relatorio_jobs
                 WHERE status IN ('pronto', 'falhou')
                   AND concluido_em >= date_trunc('hour', now())
                                       - (%(horas)s - 1) * interval '1 hour'
                 GROUP BY 1
            )
            SELECT h.hora, coalesce(c.prontos, 0), coalesce(c.falhos, 0)
              FROM horas h LEFT JOIN contagem c ON c.hora = h.hora
             ORDER BY h.hora
            """,
            {"horas": horas},
        )
        return [Hora(*linha) for linha in cursor.fetchall()]


@dataclass(frozen=True)
class Motivo:
    """Jobs failed for good for one reason: in the last 24 h and 7 days."""

    motivo: str
    dia: int
    semana: int


# The reason of an `erro`: what precedes its first colon ("ValueError: loja
# sem dados" -> "ValueError"; the service's own messages have none), without
# the "(após N tentativas)" of a retried failure.
SEM_MENSAGEM = "sem mensagem"
_MOTIVO = r"""
    coalesce(nullif(regexp_replace(split_part(erro, ':', 1),
                                   '\s*\(após \d+ tentativas\)$', ''), ''),
             'sem mensagem')
"""


def falhas_por_motivo(*, limite: int) -> list[Motivo]:
    """Failures of the last 7 days by reason, most frequent first: the first
    `limite` reasons, then the rest summed as "outros"."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH falhas AS (
                SELECT {_MOTIVO} AS motivo,
                       concluido_em >= now() - interval '24 hours' AS recente
                  FROM relatorio_jobs
                 WHERE status = 'falhou'
                   AND concluido_em >= now() - interval '7 days'
            ), por_motivo AS (
                SELECT motivo, count(*) AS semana,
                       count(*) FILTER (WHERE recente) AS dia,
                       row_number() OVER (ORDER BY count(*) DESC, motivo) AS posicao
                  FROM falhas
                 GROUP BY motivo
            )
            SELECT CASE WHEN posicao <= %(limite)s THEN motivo ELSE 'outros' END,
                   sum(dia)::int, sum(semana)::int
              FROM por_motivo
             GROUP BY 1
             ORDER BY min(posicao)
            """,
            {"limite": limite},
        )
        return [Motivo(*linha) for linha in cursor.fetchall()]


@dataclass(frozen=True)
class Fila:
    """The queue now."""

    pendentes: int
    aguardando_vaga: int
    executando: int
    mensagens: int
    pendente_mais_antigo: datetime | None
    agora: datetime

    @property
    def idade_do_mais_antigo_s(self) -> float | None:
        if self.pendente_mais_antigo is None:
            return None
        return (self.agora - self.pendente_mais_antigo).total_seconds()


def fila() -> Fila:
    """Pending jobs (those waiting for a slot of their tenant among them), the
    oldest one's creation, running jobs and django-q2's queued messages."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*), count(*) FILTER (WHERE enfileirado_em IS NULL),
                   (SELECT count(*) FROM relatorio_jobs WHERE status = 'executando'),
                   (SELECT count(*) FROM django_q_ormq),
                   min(criado_em), now()
              FROM relatorio_jobs
             WHERE status = 'pendente'
            """
        )
        linha = cursor.fetchone()
    assert linha is not None  # an aggregate always answers one row
    return Fila(*linha)


@dataclass(frozen=True)
class Dia:
    """A day's occurrences (by their planned firing) by how they ended."""

    dia: date
    no_prazo: int
    atrasadas: int
    perdidas: int
    a_conferir: int


def ocorrencias_por_dia(*, dias: int, fuso: str) -> list[Dia]:
    """The last `dias` days of `fuso` (today included), oldest first.

    - no prazo: settled by the checker without an alert (pronto in time);
    - atrasadas: their alert was closed by the checker because the report
      became `pronto` (late, but it arrived);
    - perdidas: their alert is open, or support closed it (no report);
    - a conferir: not settled yet (the deadline has not passed, or the
      checker has not looked since it did).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH inicio AS (
                SELECT (now() AT TIME ZONE %(fuso)s)::date - (%(dias)s - 1) AS dia
            ), dias AS (
                SELECT generate_series(
                           inicio.dia, inicio.dia + (%(dias)s - 1), interval '1 day'
                       )::date AS dia
                  FROM inicio
            ), contagem AS (
                SELECT (o.planejado_para AT TIME ZONE %(fuso)s)::date AS dia,
                       count(*) FILTER (WHERE o.conferida AND a.id IS NULL)
                           AS no_prazo,
                       count(*) FILTER (WHERE a.fechado_em IS NOT NULL
                                          AND a.fechado_por_id IS NULL) AS atrasadas,
                       count(*) FILTER (WHERE a.id IS NOT NULL
                                          AND (a.fechado_em IS NULL
                                               OR a.fechado_por_id IS NOT NULL))
                           AS perdidas,
                       count(*) FILTER (WHERE NOT o.conferida AND a.id IS NULL)
                           AS a_conferir
                  FROM relatorio_ocorrencias o
                  LEFT JOIN relatorio_alertas a ON a.ocorrencia_id = o.id
                 WHERE o.planejado_para >= (SELECT dia FROM inicio)::timestamp
                                           AT TIME ZONE %(fuso)s
                 GROUP BY 1
            )
            SELECT d.dia, coalesce(c.no_prazo, 0), coalesce(c.atrasadas, 0),
                   coalesce(c.perdidas, 0), coalesce(c.a_conferir, 0)
              FROM dias d LEFT JOIN contagem c ON c.dia = d.dia
             ORDER BY d.dia
            """,
            {"dias": dias, "fuso": fuso},
        )
        return [Dia(*linha) for linha in cursor.fetchall()]


@dataclass(frozen=True)
class Consumo:
    """One tenant's share: jobs asked for, or worker time spent."""

    tenant_id: int
    nome: str
    valor: float


def tenants_por_jobs(*, limite: int) -> list[Consumo]:
    """The tenants with the most jobs created (or restarted) in the last 24 h."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.id, t.nome, c.n
              FROM (SELECT tenant_id, count(*) AS n
                      FROM relatorio_jobs
                     WHERE criado_em >= now() - interval '24 hours'
                     GROUP BY tenant_id
                     ORDER BY n DESC, tenant_id
                     LIMIT %(limite)s) AS c
              JOIN tenants t ON t.id = c.tenant_id
             ORDER BY c.n DESC, t.id
            """,
            {"limite": limite},
        )
        return [Consumo(i, nome, float(n)) for i, nome, n in cursor.fetchall()]


def tenants_por_tempo(*, limite: int) -> list[Consumo]:
    """The tenants whose attempts started in the last 24 h took the most
    worker time, in seconds (a running attempt counts until now).

    Read from the attempts ledger, not from the job rows: a report that timed
    out twice before it finished cost its workers three attempts, and the
    job row keeps only the last."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.id, t.nome, c.segundos
              FROM (SELECT j.tenant_id,
                           extract(epoch FROM sum(coalesce(a.terminado_em, now())
                                                  - a.iniciado_em)) AS segundos
                      FROM relatorio_tentativas a
                      JOIN relatorio_jobs j ON j.id = a.job_id
                     WHERE a.iniciado_em >= now() - interval '24 hours'
                     GROUP BY j.tenant_id
                     ORDER BY segundos DESC, j.tenant_id
                     LIMIT %(limite)s) AS c
              JOIN tenants t ON t.id = c.tenant_id
             ORDER BY c.segundos DESC, t.id
            """,
            {"limite": limite},
        )
        return [Consumo(i, nome, float(s)) for i, nome, s in cursor.fetchall()]


@dataclass(frozen=True)
class ReusoDeTenant:
    """One tenant's chunk store (jobs.reuso): what it holds, how often it served."""

    tenant_id: int
    nome: str
    partes: int
    bytes: int
    acertos: int
    falhas: int

    @property
    def taxa_de_acerto(self) -> float | None:
        total = self.acertos + self.falhas
        return self.acertos / total if total else None


def reuso_por_tenant(*, limite: int) -> list[ReusoDeTenant]:
    """The tenants holding the most bytes of stored chunks, with their hits
    and misses so far (relatorio_reuso_tenants, one row per tenant)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.id, t.nome, coalesce(p.partes, 0), coalesce(p.bytes, 0),
                   coalesce(r.acertos, 0), coalesce(r.falhas, 0)
              FROM (SELECT tenant_id, count(*) AS partes, sum(tamanho) AS bytes
                      FROM relatorio_partes GROUP BY tenant_id) AS p
              FULL JOIN relatorio_reuso_tenants r ON r.tenant_id = p.tenant_id
              JOIN tenants t ON t.id = coalesce(p.tenant_id, r.tenant_id)
             ORDER BY 4 DESC, 5 DESC, t.id
             LIMIT %(limite)s
            """,
            {"limite": limite},
        )
        return [ReusoDeTenant(*linha) for linha in cursor.fetchall()]


def clusters_vivos() -> list[Cluster]:
    """Clusters neither stopped nor declared dead (a silent one among them
    until a peer declares it): a row per cluster start, a few a day."""
    return list(
        Cluster.objects.filter(
            encerrado_em__isnull=True, morto_em__isnull=True
        ).order_by("host", "pid")
    )
