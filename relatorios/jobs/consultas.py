"""Tenant-scoped reads. Every read of a job goes through here.

Ids are sequential and easy to guess (seed 000): a job is looked up by id AND
tenant in the same query, and another tenant's job is simply not found (404),
so its existence never leaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from django.db import connection
from django.db.models import OuterRef, Subquery
from django.http import Http404

from relatorios.banco.comum import ID_MAXIMO, json_do_banco
from relatorios.jobs import parcial
from relatorios.models import Alerta, EstadoDoJob, Loja, Ocorrencia, RelatorioJob


class Contagem(Protocol):
    """Something the first statement of a read counts as it runs: the API's
    request limit (`api.limites.Contagem`) rides on the read instead of
    costing a round trip of its own.

    `cte` is prefixed as `WITH limite AS (...)` exposing `limite.pedidos`
    and `limite.restante`; `registrar` gets them (and may raise).
    """

    @property
    def cte(self) -> str: ...

    @property
    def parametros(self) -> list[Any]: ...

    def registrar(self, pedidos: int, restante: Any) -> None: ...


# How soon a client should ask again about a job still in progress
# (Retry-After of the API's 202 and status, the pages' first poll).
RETRY_AFTER_S = "2"

# The columns of a JobEstado, in its order (pedidos' RETURNING uses it too).
COLUNAS_ESTADO = (
    "id, status, progresso, criado_em, erro, resultado, concluido_em, expira_em,"
    " tentativas, proxima_tentativa_em"
)


@dataclass(frozen=True)
class JobEstado:
    """What a requester may see of a job at one moment."""

    id: int
    status: str
    progresso: int
    criado_em: datetime
    erro: str | None
    resultado: Any
    concluido_em: datetime | None
    expira_em: datetime | None
    tentativas: int
    proxima_tentativa_em: datetime | None
    # A running job's chunks done so far, combined (`jobs.parcial`): only
    # from the status read, and only when a chunk is done.
    parcial: dict[str, Any] | None = None

    @classmethod
    def da_linha(cls, linha: Sequence[Any]) -> JobEstado:
        return cls(
            id=linha[0],
            status=linha[1],
            progresso=linha[2],
            criado_em=linha[3],
            erro=linha[4],
            resultado=json_do_banco(linha[5]),
            concluido_em=linha[6],
            expira_em=linha[7],
            tentativas=linha[8],
            proxima_tentativa_em=linha[9],
        )


def estado_do_job(
    *, tenant_id: int, job_id: int, contagem: Contagem | None = None
) -> JobEstado:
    """The status endpoint's read: one statement by id and tenant, no ORM.

    Polled every two seconds by every waiting client: building and compiling
    an ORM query was most of this request's Python time (docs/historico/benchmarks.md).
    With `contagem` the same statement counts the request against the API
    limit (relatorios/api/limites.py): still one round trip. A running job
    past 0% reads its partial result with a second one (`jobs.parcial.ler`).
    """
    if not 0 < job_id <= ID_MAXIMO:
        raise Http404("job não encontrado")
    linha = ler_contando(
        contagem,
        colunas=COLUNAS_ESTADO,
        juncao="relatorio_jobs ON id = %s AND tenant_id = %s",
        parametros=[job_id, tenant_id],
    )
    if linha[0] is None:
        raise Http404("job não encontrado")
    return com_parcial(JobEstado.da_linha(linha), tenant_id=tenant_id)


def com_parcial(estado: JobEstado, *, tenant_id: int) -> JobEstado:
    """`estado` with its partial result, when it runs and a chunk is done
    (its progress is past 0: each chunk done moves it, up to 100 chunks)."""
    if (
        estado.status != EstadoDoJob.EXECUTANDO
        or estado.progresso <= 0
        or not parcial.ligado()
    ):
        return estado
    return replace(estado, parcial=parcial.ler(job_id=estado.id, tenant_id=tenant_id))


def ler_contando(
    contagem: Contagem | None, *, colunas: str, juncao: str, parametros: list[Any]
) -> list[Any]:
    """One row of `SELECT colunas FROM <one row> LEFT JOIN juncao` (the
    joined columns NULL when nothing matched). With a `contagem` that one row
    is the API limit's UPSERT: the request is counted, and its 429 raised, by
    the same statement."""
    prefixo, fonte, figuras, contados = "", "(SELECT) AS um", "NULL, NULL", []
    if contagem is not None:
        prefixo, fonte = f"WITH {contagem.cte} ", "limite"
        figuras, contados = "limite.pedidos, limite.restante", contagem.parametros
    with connection.cursor() as cursor:
        cursor.execute(
            f"{prefixo}SELECT {colunas}, {figuras} FROM {fonte} LEFT JOIN {juncao}",
            [*contados, *parametros],
        )
        *linha, pedidos, restante = cursor.fetchone()
    if contagem is not None:
        contagem.registrar(pedidos, restante)
    return linha


def job_do_tenant(
    *, tenant_id: int, job_id: int, campos: tuple[str, ...] = ()
) -> RelatorioJob:
    if not 0 < job_id <= ID_MAXIMO:
        raise Http404("job não encontrado")
    consulta = RelatorioJob.objects.filter(pk=job_id, tenant_id=tenant_id)
    if campos:
        consulta = consulta.only(*campos)
    job = consulta.first()
    if job is None:
        raise Http404("job não encontrado")
    return job


def jobs_recentes(*, tenant_id: int, limite: int = 20) -> list[RelatorioJob]:
    """The tenant's latest jobs, newest first (index relatorio_jobs_recentes),
    each with `agendamento_nome`: the schedule that asked for it, if one did
    (the occurrences' index on job_id, one probe per row)."""
    agendamento = (
        Ocorrencia.objects.filter(job_id=OuterRef("pk"))
        .order_by("-planejado_para")
        .values("agendamento__nome")[:1]
    )
    return list(
        RelatorioJob.objects.filter(tenant_id=tenant_id)
        .select_related("solicitado_por")
        .annotate(agendamento_nome=Subquery(agendamento))
        .only(
            "id",
            "tipo",
            "status",
            "params",
            "progresso",
            "criado_em",
            "concluido_em",
            "solicitado_por__username",
            "solicitado_por__first_name",
            "solicitado_por__last_name",
        )
        .order_by("-criado_em", "-id")[:limite]
    )


def lojas_do_tenant(*, tenant_id: int) -> list[tuple[str, str]]:
    """(codigo, nome) of the tenant's stores, for the request form."""
    return list(
        Loja.objects.filter(tenant_id=tenant_id)
        .order_by("codigo")
        .values_list("codigo", "nome")
    )


@dataclass(frozen=True)
class Resumo:
    """A finished result without its lines: how many there are, and the rest
    (totals, agrupar...), read without loading the lines themselves."""

    n_linhas: int | None
    resto: dict[str, Any]


def resumo_do_resultado(job: RelatorioJob) -> Resumo:
    """`job` comes from job_do_tenant: the tenant was checked there, and is
    checked again here so this can never read across tenants."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT CASE WHEN jsonb_typeof(resultado -> 'linhas') = 'array'
                        THEN jsonb_array_length(resultado -> 'linhas') END,
                   CASE WHEN jsonb_typeof(resultado) = 'object'
                        THEN resultado - 'linhas' ELSE resultado END
              FROM relatorio_jobs WHERE id = %s AND tenant_id = %s
            """,
            [job.pk, job.tenant_id],
        )
        linha = cursor.fetchone()
    if linha is None:
        raise Http404("job não encontrado")
    resto = json_do_banco(linha[1])
    return Resumo(
        n_linhas=linha[0], resto=resto if isinstance(resto, dict) else {"": resto}
    )


def alertas_abertos(*, tenant_id: int) -> int:
    """How many of the tenant's alerts are open (the /painel/ box)."""
    return Alerta.objects.filter(tenant_id=tenant_id, fechado_em__isnull=True).count()


@dataclass(frozen=True)
class AgendamentoNoPainel:
    """One of the tenant's schedules and the last report it delivered."""

    id: int
    nome: str
    tipo: str
    ativo: bool
    proximo_disparo: datetime | None
    entregue_em: datetime | None
    job_id: int | None
    params: dict[str, Any] | None


def agendamentos_no_painel(*, tenant_id: int) -> list[AgendamentoNoPainel]:
    """The tenant's schedules (not deleted), each with its last delivered
    occurrence: one statement, a lateral lookup per schedule through the
    partial index relatorio_ocorr_entregues."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT g.id, g.nome, g.tipo, g.ativo, g.proximo_disparo,
                   u.entregue_em, u.job_id, u.params
              FROM relatorio_agendamentos g
              LEFT JOIN LATERAL (
                   SELECT o.entregue_em, o.job_id, o.params
                     FROM relatorio_ocorrencias o
                    WHERE o.agendamento_id = g.id AND o.entregue_em IS NOT NULL
                    ORDER BY o.entregue_em DESC
                    LIMIT 1) u ON true
             WHERE g.tenant_id = %s AND g.excluido_em IS NULL
             ORDER BY g.nome, g.id
             LIMIT 200
            """,
            [tenant_id],
        )
        linhas = cursor.fetchall()
    return [
        AgendamentoNoPainel(
            id=linha[0],
            nome=linha[1],
            tipo=linha[2],
            ativo=linha[3],
            proximo_disparo=linha[4],
            entregue_em=linha[5],
            job_id=linha[6],
            params=json_do_banco(linha[7]),
        )
        for linha in linhas
    ]
