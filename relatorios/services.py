"""The job lifecycle: the only code that changes relatorio_jobs.

Views, admin actions, tasks and commands call these functions; none of them
saves a job itself. Every transition is a guarded UPDATE that reports whether
it won, and every write a worker makes is fenced by its attempt number
(`tentativas`), so a worker that lost its job cannot overwrite the row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models.functions import Now
from django_q.tasks import async_task

from relatorios import normalizacao, tipos
from relatorios.models import RelatorioJob, Status

logger = logging.getLogger(__name__)

TAREFA = "relatorios.tasks.executar_relatorio"
# A worker is killed this long after its report's own SQL timeout (the hard
# stop); the Q_CLUSTER retry in settings is derived from the same margin.
MARGEM_HARD_STOP_S = 30

_COLUNAS_ESTADO = (
    "id, status, progresso, criado_em, erro, resultado, concluido_em, expira_em"
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

    @classmethod
    def da_linha(cls, linha: Sequence[Any]) -> JobEstado:
        resultado = linha[5]
        # Django loads jsonb as text for its JSONField; raw cursors see the text.
        if isinstance(resultado, str):
            resultado = json.loads(resultado)
        return cls(
            id=linha[0],
            status=linha[1],
            progresso=linha[2],
            criado_em=linha[3],
            erro=linha[4],
            resultado=resultado,
            concluido_em=linha[6],
            expira_em=linha[7],
        )


@dataclass(frozen=True)
class Submissao:
    """The job that answers a request, and whether this request created it."""

    job: JobEstado
    criado: bool


@dataclass(frozen=True)
class JobReivindicado:
    """A job a worker now owns, for the attempt `tentativa`."""

    id: int
    tenant_id: int
    tipo: str
    params: dict[str, Any]
    tentativa: int
    fuso_horario: str


def submeter(
    *, tenant_id: int, tipo: str, params_brutos: Any, usuario_id: int | None
) -> Submissao:
    """Accept a report request: reuse the tenant's job for it or create one.

    1. Normalize the parameters and derive the chave (pure; errors name the field).
    2. Hit path: read the row by chave. One read-only statement: no row lock,
       no WAL. A pending, running or valid finished job answers the request.
    3. Otherwise (absent, failed or expired) check the store codes and run seed
       000's upsert. Its ON CONFLICT ... WHERE alone decides, race-free, whether
       this request creates or restarts the job; the queue message is written
       in the same transaction, so a committed job always has one.
    4. An empty RETURNING means another request won the race after step 2
       (its row was not visible to our read, or was being restarted). A new
       statement sees the committed row: go back to step 2.
    """
    tipo_relatorio = tipos.obter(tipo)
    params = tipo_relatorio.normalizar(params_brutos)
    chave = normalizacao.chave(tenant_id, tipo, params)
    lojas_verificadas = False
    for _ in range(3):
        atual, reiniciavel = _ler_por_chave(chave=chave, tenant_id=tenant_id)
        if atual is not None and not reiniciavel:
            return Submissao(job=atual, criado=False)
        if not lojas_verificadas:
            _verificar_lojas(tenant_id=tenant_id, lojas=params["lojas"])
            lojas_verificadas = True
        with transaction.atomic():
            novo = _inserir_ou_reiniciar(
                chave=chave,
                tenant_id=tenant_id,
                tipo=tipo,
                params=params,
                usuario_id=usuario_id,
            )
            if novo is not None:
                _enfileirar(job_id=novo.id, timeout_s=tipo_relatorio.timeout())
        if novo is not None:
            logger.info(
                "job aceito",
                extra={"job_id": novo.id, "tenant_id": tenant_id, "tipo": tipo},
            )
            return Submissao(job=novo, criado=True)
    # Three lost races in a row on one key means the row keeps flipping between
    # restartable and not; say so instead of looping.
    raise RuntimeError(f"submit did not settle for chave {chave}")


def reivindicar(*, job_id: int) -> JobReivindicado | None:
    """Take a pending job for one attempt, or None if it is not pending.

    A second delivery of the same queue message finds nothing to claim.
    """
    with connection.cursor() as cursor:
        # Raw SQL: the ORM cannot UPDATE ... FROM ... RETURNING, and the claim
        # must be one statement to be atomic.
        cursor.execute(
            """
            UPDATE relatorio_jobs AS j
               SET status = 'executando',
                   tentativas = j.tentativas + 1,
                   iniciado_em = now(),
                   heartbeat_em = now()
              FROM tenants AS t
             WHERE j.id = %s AND j.status = 'pendente' AND t.id = j.tenant_id
            RETURNING j.id, j.tenant_id, j.tipo, j.params, j.tentativas,
                      t.fuso_horario
            """,
            [job_id],
        )
        linha = cursor.fetchone()
    if linha is None:
        return None
    params = json.loads(linha[3]) if isinstance(linha[3], str) else linha[3]
    return JobReivindicado(
        id=linha[0],
        tenant_id=linha[1],
        tipo=linha[2],
        params=params,
        tentativa=linha[4],
        fuso_horario=linha[5],
    )


def batimento(*, job_id: int, tentativa: int) -> bool:
    """Prove the attempt is alive; False once the job is no longer this attempt's."""
    return _na_tentativa(job_id, tentativa).update(heartbeat_em=Now()) == 1


def registrar_progresso(*, job_id: int, tentativa: int, progresso: int) -> bool:
    """Record the share of the report done (0..100) for this attempt."""
    return (
        _na_tentativa(job_id, tentativa).update(
            progresso=max(0, min(100, progresso)), heartbeat_em=Now()
        )
        == 1
    )


def concluir(*, job_id: int, tentativa: int, resultado: Any, validade_s: int) -> bool:
    """Finish the attempt with its result, valid for `validade_s` seconds."""
    return (
        _na_tentativa(job_id, tentativa).update(
            status=Status.PRONTO,
            resultado=resultado,
            progresso=100,
            concluido_em=Now(),
            expira_em=Now() + timedelta(seconds=validade_s),
            erro=None,
            erro_detalhe=None,
        )
        == 1
    )


def falhar(*, job_id: int, tentativa: int, erro: str, detalhe: str | None) -> bool:
    """End the attempt as failed: `erro` for the tenant, `detalhe` for staff."""
    return (
        _na_tentativa(job_id, tentativa).update(
            status=Status.FALHOU,
            erro=erro,
            erro_detalhe=detalhe,
            concluido_em=Now(),
        )
        == 1
    )


def _na_tentativa(job_id: int, tentativa: int) -> Any:
    # The fence: only the attempt that claimed the job may write to it.
    return RelatorioJob.objects.filter(
        pk=job_id, status=Status.EXECUTANDO, tentativas=tentativa
    )


def _ler_por_chave(*, chave: str, tenant_id: int) -> tuple[JobEstado | None, bool]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT {_COLUNAS_ESTADO},
                   status = 'falhou' OR (status = 'pronto' AND expira_em < now())
              FROM relatorio_jobs
             WHERE chave = %s AND tenant_id = %s
            """,
            [chave, tenant_id],
        )
        linha = cursor.fetchone()
    if linha is None:
        return None, False
    return JobEstado.da_linha(linha), bool(linha[8])


def _inserir_ou_reiniciar(
    *,
    chave: str,
    tenant_id: int,
    tipo: str,
    params: dict[str, Any],
    usuario_id: int | None,
) -> JobEstado | None:
    with connection.cursor() as cursor:
        # Seed 000's upsert, verbatim in spirit: the WHERE of DO UPDATE is the
        # only place that decides when an existing job may start over.
        cursor.execute(
            f"""
            INSERT INTO relatorio_jobs AS j
                   (chave, tenant_id, tipo, params, status, solicitado_por_id)
            VALUES (%s, %s, %s, %s::jsonb, 'pendente', %s)
            ON CONFLICT (chave) DO UPDATE
               SET status = 'pendente', tentativas = 0, erro = NULL,
                   erro_detalhe = NULL, resultado = NULL, criado_em = now(),
                   iniciado_em = NULL, heartbeat_em = NULL, concluido_em = NULL,
                   expira_em = NULL, progresso = 0,
                   solicitado_por_id = EXCLUDED.solicitado_por_id
             WHERE j.status = 'falhou'
                OR (j.status = 'pronto' AND j.expira_em < now())
            RETURNING {_COLUNAS_ESTADO}
            """,
            [chave, tenant_id, tipo, json.dumps(params), usuario_id],
        )
        linha = cursor.fetchone()
    return None if linha is None else JobEstado.da_linha(linha)


def _verificar_lojas(*, tenant_id: int, lojas: list[str]) -> None:
    if not lojas:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT codigo FROM erp_lojas WHERE tenant_id = %s AND codigo = ANY(%s)",
            [tenant_id, lojas],
        )
        existentes = {codigo for (codigo,) in cursor.fetchall()}
    desconhecidas = [codigo for codigo in lojas if codigo not in existentes]
    if desconhecidas:
        raise normalizacao.ErroDeParametro(
            "lojas", f"lojas desconhecidas: {', '.join(desconhecidas)}"
        )


def _enfileirar(*, job_id: int, timeout_s: int) -> None:
    # The ORM broker writes the message through the same connection, inside the
    # caller's transaction: it commits or rolls back with the job.
    async_task(
        TAREFA,
        job_id,
        task_name=f"relatorio-{job_id}",
        q_options={"timeout": timeout_s + MARGEM_HARD_STOP_S},
    )
