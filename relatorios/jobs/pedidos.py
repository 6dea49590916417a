"""The submit: one request becomes a job, or the job that already answers it.

Seed 000's dedup by chave (tenant + type + normalized parameters) and its
race-free upsert, in at most two round trips (`submeter`'s steps).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django_q.conf import Conf

from relatorios import tipos
from relatorios.fila import mensagens
from relatorios.jobs.consultas import (
    COLUNAS_ESTADO,
    Contagem,
    JobEstado,
    ler_contando,
)
from relatorios.jobs.vagas import despachar, timeout_da_tarefa
from relatorios.models.jobs import ATIVOS
from relatorios.notificacoes.email import email_para_notificar, inscrever
from relatorios.operacao import logs, metricas
from relatorios.tipos import normalizacao
from relatorios.tipos.base import TipoRelatorio

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submissao:
    """The job that answers a request, and whether this request created it."""

    job: JobEstado
    criado: bool
    # Created by restarting a failed or expired job (`criado` is then True).
    reiniciado: bool = False


class LimiteDePendentes(Exception):
    """The tenant already has its maximum of pending jobs (HTTP 429)."""

    def __init__(self, limite: int) -> None:
        super().__init__(
            f"limite de {limite} relatórios pendentes atingido; tente mais tarde"
        )
        self.limite = limite


def submeter(
    *,
    tenant_id: int,
    tipo: str,
    params_brutos: Any,
    usuario_id: int | None,
    request_id: str | None = None,
    contagem: Contagem | None = None,
    antecipado: bool = False,
    notificar: Any = False,
    email_do_usuario: str | None = None,
) -> Submissao:
    """Accept a report request (see `_submeter`), counting its outcome.

    `antecipado`: a request of computing ahead (jobs.antecipacao), not of a
    person: a job it creates is marked, waits for idle capacity, and may
    take at most half the tenant's RELATORIOS_MAX_PENDENTES_POR_TENANT.

    `request_id` (default: the current request's, relatorios/operacao/logs.py) is
    stored with a job this request creates or restarts. `contagem`: the API
    limit's count, carried by the read by chave (relatorios/api/limites.py);
    over the limit, its 429 is raised before anything is written.
    `notificar`: the request's `notificar_email` (true: one email to
    `email_do_usuario` when the job ends), checked before anything is written
    (ErroDeParametro naming it); a job already finished sends none.
    """
    email = email_para_notificar(
        valor=notificar, email_do_usuario=email_do_usuario, tenant_id=tenant_id
    )
    try:
        submissao = _submeter(
            tenant_id=tenant_id,
            tipo=tipo,
            params_brutos=params_brutos,
            usuario_id=usuario_id,
            request_id=request_id or logs.request_id_atual(),
            contagem=contagem,
            antecipado=antecipado,
        )
    except (normalizacao.ErroDeParametro, LimiteDePendentes):
        if not antecipado:
            metricas.submissao(tipo=tipo, desfecho="rejeitado")
        raise
    if antecipado:
        # Not a request: relatorios_submissoes_total counts what was asked.
        return submissao
    if not submissao.criado:
        desfecho = "reaproveitado"
    else:
        desfecho = "reiniciado" if submissao.reiniciado else "novo"
    metricas.submissao(tipo=tipo, desfecho=desfecho)
    if email is not None and submissao.job.status in ATIVOS:
        inscrever(job_id=submissao.job.id, email=email)
    return submissao


def _submeter(
    *,
    tenant_id: int,
    tipo: str,
    params_brutos: Any,
    usuario_id: int | None,
    request_id: str | None,
    contagem: Contagem | None,
    antecipado: bool = False,
) -> Submissao:
    """Accept a report request: reuse the tenant's job for it or create one.

    1. Normalize the parameters and derive the chave (pure; errors name the field).
    2. Hit path: read the row by chave. One read-only statement: no row lock,
       no WAL. A pending, running or valid finished job answers the request.
       A miss also reserves the id a new job will have (the queue message
       names it, and is signed before the write).
    3. Otherwise (absent, failed or expired) one call of the database
       function `relatorios_submeter` (migration 0014) checks the store
       codes, locks the tenant, counts its occupancy and runs seed 000's
       upsert; when it created or restarted the job it writes the queue
       message too, if the tenant has a free slot. One statement, so one
       transaction of its own (or the caller's): the message commits or rolls
       back with the row. Over the pending cap it writes nothing and the
       request is refused (LimiteDePendentes).
    4. An empty RETURNING means another request won the race after step 2
       (its row was not visible to our read, or was being restarted). A new
       statement sees the committed row: go back to step 2.

    A new submit is two round trips (read, function), a hit one. A person's
    first hit on a job computed ahead (the read says so) records that it was
    asked for: one guarded UPDATE, once per such job (`_marcar_pedido`).
    """
    tipo_relatorio = tipos.obter(tipo)  # once: the message's timeout is its too
    params = tipo_relatorio.normalizar(params_brutos)
    chave = normalizacao.chave(tenant_id, tipo, params)
    for _ in range(3):
        atual, reiniciavel, job_id, a_marcar = _ler_por_chave(
            chave=chave, tenant_id=tenant_id, contagem=contagem
        )
        contagem = None  # counted once, by the first read
        if atual is not None and not reiniciavel:
            if a_marcar and not antecipado:
                _marcar_pedido(job_id=atual.id, tenant_id=tenant_id)
            # DEBUG, not INFO: a hit is the commonest answer of the API and
            # changes nothing; relatorios_submissoes_total{desfecho=
            # "reaproveitado"} counts them. The line cost ~9% of a hit's
            # instructions (docs/benchmarks.md, issue 27).
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "job reaproveitado",
                    extra={
                        "evento": "reaproveitado",
                        "job_id": atual.id,
                        "tenant_id": tenant_id,
                        "tipo": tipo,
                        "chave": chave[:12],
                        "status": atual.status,
                    },
                )
            return Submissao(job=atual, criado=False)
        gravado = _gravar_pedido(
            job_id=job_id,
            chave=chave,
            tenant_id=tenant_id,
            tipo=tipo,
            params=params,
            usuario_id=usuario_id,
            request_id=request_id,
            antecipado=antecipado,
            tipo_relatorio=tipo_relatorio,
        )
        if gravado is not None:
            novo, enfileirado = gravado
            # The read found a failed or expired row: the function restarted it.
            reiniciado = atual is not None
            logger.info(
                "job aceito",
                extra={
                    "evento": "solicitado",
                    "job_id": novo.id,
                    "tenant_id": tenant_id,
                    "tipo": tipo,
                    "chave": chave[:12],
                    "reiniciado": reiniciado,
                    "enfileirado": enfileirado,
                    "antecipado": antecipado,
                },
            )
            return Submissao(job=novo, criado=True, reiniciado=reiniciado)
    # Three lost races in a row on one key means the row keeps flipping between
    # restartable and not; say so instead of looping.
    raise RuntimeError(f"submit did not settle for chave {chave}")


def _ler_por_chave(
    *, chave: str, tenant_id: int, contagem: Contagem | None = None
) -> tuple[JobEstado | None, bool, int, bool]:
    """(the job, whether it may start over, the id a write would use, whether
    it was computed ahead and nobody asked for it yet).

    With `contagem`, the same statement counts the request against the API
    limit (its UPSERT as a CTE, on an unlogged table) and raises its 429.
    """
    # By chave alone, so the plan is always the unique index; the tenant is
    # inside the chave, and checked below as an invariant. On a miss the
    # sequence gives the new job's id; COALESCE evaluates nextval only then,
    # so a hit writes nothing but the limit's counter.
    colunas = f"""{COLUNAS_ESTADO},
        status = 'falhou' OR (status = 'pronto' AND expira_em < now()),
        tenant_id,
        COALESCE(id, nextval(pg_get_serial_sequence('relatorio_jobs', 'id'))),
        antecipado_em IS NOT NULL AND pedido_em IS NULL"""
    linha = ler_contando(
        contagem,
        colunas=colunas,
        juncao="relatorio_jobs ON chave = %s",
        parametros=[chave],
    )
    if linha[0] is None:
        return None, False, int(linha[12]), False
    if linha[11] != tenant_id:
        raise RuntimeError(f"chave {chave} belongs to another tenant")
    return JobEstado.da_linha(linha), bool(linha[10]), int(linha[12]), bool(linha[13])


def _marcar_pedido(*, job_id: int, tenant_id: int) -> None:
    """The first request a job computed ahead answers: its `pedido_em` (the
    history and the precision of computing ahead read it). Guarded, so
    concurrent first requests write it once. A job still waiting becomes a
    person's job (the claim no longer waits for idle capacity) and is
    dispatched if its tenant has a free slot."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE relatorio_jobs SET pedido_em = now()
             WHERE id = %s AND tenant_id = %s
               AND antecipado_em IS NOT NULL AND pedido_em IS NULL
            RETURNING status = 'pendente' AND enfileirado_em IS NULL
            """,
            [job_id, tenant_id],
        )
        linha = cursor.fetchone()
    if linha is not None and linha[0]:
        despachar(tenant_id=tenant_id)


# The job's columns as `relatorios_submeter` returns them (a relatorio_jobs row).
_COLUNAS_DA_FUNCAO = ", ".join(
    f"(s.job).{c.strip()}" for c in COLUNAS_ESTADO.split(",")
)


def _gravar_pedido(
    *,
    job_id: int,
    chave: str,
    tenant_id: int,
    tipo: str,
    params: dict[str, Any],
    usuario_id: int | None,
    request_id: str | None,
    antecipado: bool = False,
    tipo_relatorio: TipoRelatorio,
) -> tuple[JobEstado, bool] | None:
    """Steps 3-4 of `submeter`: (the job, whether it got its message), or None
    when another request's row stands in the way (read again).

    Raw SQL because the concurrency lives in the function (migration 0014 says
    why it is a function); the message is signed here, by django-q2's own
    signer (`mensagens.pacote`), and inserted there.
    """
    mensagem = mensagens.pacote(
        mensagens.TAREFA_RELATORIO,
        job_id,
        nome=f"relatorio-{job_id}",
        timeout=timeout_da_tarefa(tipo_relatorio),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT s.desfecho, s.lojas_desconhecidas, s.enfileirado,
                   {_COLUNAS_DA_FUNCAO}
              FROM relatorios_submeter(
                       %(id)s::bigint, %(chave)s::text, %(tenant)s::bigint,
                       %(tipo)s::text, %(params)s::jsonb, %(usuario)s::bigint,
                       %(lojas)s::text[], %(max_pendentes)s::bigint,
                       %(max_em_voo)s::bigint, %(fila)s::text, %(mensagem)s::text,
                       %(request_id)s::text, %(antecipado)s::boolean
                   ) AS s
            """,
            {
                "id": job_id,
                "chave": chave,
                "tenant": tenant_id,
                "tipo": tipo,
                "params": json.dumps(params),
                "usuario": usuario_id,
                "lojas": list(params["lojas"]),
                # Computing ahead leaves half the pending cap to people.
                "max_pendentes": settings.RELATORIOS_MAX_PENDENTES_POR_TENANT
                // (2 if antecipado else 1),
                "max_em_voo": settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT,
                "fila": Conf.CLUSTER_NAME,
                "mensagem": mensagem,
                "request_id": request_id,
                "antecipado": antecipado,
            },
        )
        linha = cursor.fetchone()
    desfecho = linha[0]
    if desfecho == "lojas":
        raise normalizacao.ErroDeParametro(
            "lojas", f"lojas desconhecidas: {', '.join(linha[1])}"
        )
    if desfecho == "limite":
        raise LimiteDePendentes(settings.RELATORIOS_MAX_PENDENTES_POR_TENANT)
    if desfecho == "corrida":
        return None
    return JobEstado.da_linha(linha[3:]), bool(linha[2])
