"""Support staff's reads across tenants: the admin's numbers, excerpts, timeline.

Reads only. Every query here is bounded by an index, so the admin stays cheap
with millions of jobs: active jobs through the partial indexes of pending and
running jobs, recent ones through `relatorio_jobs_criado`, failures through
`relatorio_jobs_falhos`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, Min, Q
from django.utils import timezone

from relatorios.models import EstadoDoJob, RelatorioJob, RelatorioTentativa
from relatorios.models.jobs import ATIVOS, Agora

JANELA = timedelta(hours=24)


@dataclass(frozen=True)
class Indicadores:
    """The numbers support looks at first (the admin's landing page)."""

    falhos_24h: int
    travados: int
    pendentes: int
    aguardando_vaga: int
    mensagens_na_fila: int
    pendente_mais_antigo: datetime | None
    pendentes_antigos: int
    # {tipo: {status: n}}: active jobs now, finished jobs created in the window.
    por_tipo: dict[str, dict[str, int]] = field(default_factory=dict)
    alertas_abertos: int = 0
    agendamentos_ativos: int = 0
    # The retention policy (relatorios/jobs/retencao.py), stated on the landing page.
    reter_dias: int = 0

    @property
    def idade_do_pendente_mais_antigo(self) -> timedelta | None:
        if self.pendente_mais_antigo is None:
            return None
        return timezone.now() - self.pendente_mais_antigo


def pendentes_antigos() -> Any:
    """Pending for longer than RELATORIOS_PENDENTE_ANTIGO_S (the admin filter)."""
    limite = Agora() - timedelta(seconds=settings.RELATORIOS_PENDENTE_ANTIGO_S)
    return RelatorioJob.objects.filter(
        status=EstadoDoJob.PENDENTE, criado_em__lt=limite
    )


def falhos_recentes() -> Any:
    return RelatorioJob.objects.filter(
        status=EstadoDoJob.FALHOU, concluido_em__gte=Agora() - JANELA
    )


def calcular() -> Indicadores:
    from django_q.models import OrmQ

    pendentes = RelatorioJob.objects.filter(status=EstadoDoJob.PENDENTE).aggregate(
        n=Count("pk"),
        aguardando=Count("pk", filter=Q(enfileirado_em__isnull=True)),
        mais_antigo=Min("criado_em"),
    )
    por_tipo: dict[str, dict[str, int]] = {}
    linhas = list(
        RelatorioJob.objects.filter(status__in=ATIVOS)
        .values_list("tipo", "status")
        .annotate(n=Count("pk"))
        .order_by()
    ) + list(
        RelatorioJob.objects.filter(
            status__in=(EstadoDoJob.PRONTO, EstadoDoJob.FALHOU),
            criado_em__gte=Agora() - JANELA,
        )
        .values_list("tipo", "status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for tipo, status, n in linhas:
        por_tipo.setdefault(tipo, {})[status] = n
    alertas_abertos, agendamentos_ativos = _agendamentos()
    return Indicadores(
        falhos_24h=falhos_recentes().count(),
        travados=RelatorioJob.objects.travados().count(),
        pendentes=pendentes["n"],
        aguardando_vaga=pendentes["aguardando"],
        mensagens_na_fila=OrmQ.objects.count(),
        pendente_mais_antigo=pendentes["mais_antigo"],
        pendentes_antigos=pendentes_antigos().count(),
        por_tipo=dict(sorted(por_tipo.items())),
        alertas_abertos=alertas_abertos,
        agendamentos_ativos=agendamentos_ativos,
        reter_dias=settings.RELATORIOS_RETER_DIAS,
    )


def _agendamentos() -> tuple[int, int]:
    """(open alerts, active schedules) in one round trip: the open alerts
    through the partial index relatorio_alertas_abertos; schedules are few
    (one per tenant's report), so their count is a small scan."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT (SELECT count(*) FROM relatorio_alertas WHERE fechado_em IS NULL),
                   (SELECT count(*) FROM relatorio_agendamentos
                     WHERE ativo AND excluido_em IS NULL)
            """
        )
        alertas, ativos = cursor.fetchone()
    return int(alertas), int(ativos)


@dataclass(frozen=True)
class Trecho:
    """The start of a large JSON or text column, pretty-printed, and its size."""

    texto: str
    tamanho: int

    @property
    def truncado(self) -> bool:
        return len(self.texto) < self.tamanho


def trechos(job_id: int, *, limite: int) -> dict[str, Trecho | None]:
    """params, resultado, checkpoint and erro_detalhe of a job, each cut at
    `limite` characters by PostgreSQL: a result of many megabytes is never
    loaded into the admin's process to show its first screen."""
    colunas = ("params", "resultado", "checkpoint")
    selecao = ", ".join(
        f"left(jsonb_pretty({c}), %(limite)s), length(jsonb_pretty({c}))"
        for c in colunas
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT {selecao}, left(erro_detalhe, %(limite)s), length(erro_detalhe)
              FROM relatorio_jobs WHERE id = %(id)s
            """,
            {"id": job_id, "limite": limite},
        )
        linha = cursor.fetchone()
    if linha is None:
        return {}
    nomes = (*colunas, "erro_detalhe")
    return {
        nome: None
        if linha[2 * i] is None
        else Trecho(texto=linha[2 * i], tamanho=linha[2 * i + 1])
        for i, nome in enumerate(nomes)
    }


def resultado_em_texto(job_id: int) -> str | None:
    """The whole result as JSON text (the admin's full download)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT resultado::text FROM relatorio_jobs WHERE id = %s", [job_id]
        )
        linha = cursor.fetchone()
    return None if linha is None else linha[0]


@dataclass(frozen=True)
class Evento:
    """One line of a job's timeline in the admin."""

    quando: datetime
    o_que: str
    detalhe: str = ""


def linha_do_tempo(job: RelatorioJob, *, limite: int = 50) -> list[Evento]:
    """What is known of a job's life, oldest first.

    The row keeps the latest of each timestamp (a restart resets them); every
    attempt comes from the ledger (relatorio_tentativas: who ran it, how it
    ended), and support's actions from the admin log.
    """
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType

    eventos: list[Evento] = [Evento(job.criado_em, "criado (ou recomeçado)")]
    if job.iniciado_em:
        eventos.append(
            Evento(job.iniciado_em, "iniciado", f"tentativa {job.tentativas}")
        )
    if job.heartbeat_em:
        eventos.append(Evento(job.heartbeat_em, "último batimento"))
    if job.proxima_tentativa_em:
        eventos.append(
            Evento(job.proxima_tentativa_em, "próxima tentativa", job.erro or "")
        )
    if job.concluido_em:
        eventos.append(Evento(job.concluido_em, f"concluído: {job.status}"))
    if job.expira_em:
        eventos.append(Evento(job.expira_em, "resultado expira"))
    for tentativa in RelatorioTentativa.objects.filter(job=job).order_by(
        "-iniciado_em"
    )[:limite]:
        eventos.append(
            Evento(
                tentativa.iniciado_em,
                f"tentativa {tentativa.numero} iniciada",
                tentativa.trabalhador,
            )
        )
        if tentativa.terminado_em is not None:
            eventos.append(
                Evento(
                    tentativa.terminado_em,
                    f"tentativa {tentativa.numero}: {tentativa.get_desfecho_display()}",
                    tentativa.erro or "",
                )
            )
    tipo_de_conteudo = ContentType.objects.get_for_model(RelatorioJob)
    for entrada in (
        LogEntry.objects.filter(content_type=tipo_de_conteudo, object_id=str(job.pk))
        .select_related("user")
        .order_by("-action_time")[:limite]
    ):
        eventos.append(
            Evento(
                entrada.action_time,
                f"suporte: {entrada.user}",
                entrada.get_change_message(),
            )
        )
    return sorted(eventos, key=lambda e: e.quando)
