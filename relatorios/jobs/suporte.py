"""Support's actions on one job (the admin calls these; none saves a job itself)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models.functions import Now

from relatorios.jobs.ciclo import apagar_parciais, encerrar_abertas
from relatorios.jobs.vagas import (
    despachar_do_job,
    enfileirar,
    ocupacao,
    travar_tenant_do_job,
)
from relatorios.models import (
    Desfecho,
    EstadoDoJob,
    RelatorioJob,
)
from relatorios.models.jobs import Agora
from relatorios.notificacoes import arquivos, links, saida

# What a job forgets when it starts over: support's rerun here, seed 000's
# restart in the submit's ON CONFLICT (banco/sql/relatorios_submeter.sql). The
# SQL function cannot read a Python constant, so tests/jobs/test_recomeco.py
# holds the two lists equal.
RECOMECO = """
    status = 'pendente', tentativas = 0, erro = NULL, erro_detalhe = NULL,
    resultado = NULL, checkpoint = NULL, criado_em = now(), iniciado_em = NULL,
    heartbeat_em = NULL, concluido_em = NULL, expira_em = NULL, progresso = 0,
    proxima_tentativa_em = NULL
"""


@dataclass(frozen=True)
class Acao:
    """Outcome of a support action on one job: done, or why not."""

    feita: bool
    motivo: str = ""


def reexecutar(*, job_id: int) -> Acao:
    """Start a failed, stuck or expired job over, under the API's rules.

    A stuck job's worker is fenced out (its claim timestamp no longer matches).
    The tenant's pending cap applies, and the job takes a slot or waits for one.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        tenant_id = travar_tenant_do_job(cursor, job_id)
        if tenant_id is None:
            return Acao(False, "job não encontrado")
        pendentes, em_voo = ocupacao(cursor, tenant_id)
        if pendentes >= settings.RELATORIOS_MAX_PENDENTES_POR_TENANT:
            return Acao(False, "o tenant está no limite de relatórios pendentes")
        # A stuck job is already counted in flight: it keeps its slot.
        com_mensagem = (
            _status(cursor, job_id) == EstadoDoJob.EXECUTANDO
            or em_voo < settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT
        )
        cursor.execute(
            f"""
            UPDATE relatorio_jobs SET {RECOMECO},
                   enfileirado_em = CASE WHEN %(enfileirar)s THEN now() END
             WHERE id = %(id)s
               AND (status = 'falhou'
                    OR (status = 'pronto' AND expira_em < now())
                    OR (status = 'executando'
                        AND heartbeat_em < now() - make_interval(secs => %(orfao)s)))
            RETURNING tipo
            """,
            {
                "id": job_id,
                "enfileirar": com_mensagem,
                "orfao": settings.RELATORIOS_ORFAO_APOS_S,
            },
        )
        linha = cursor.fetchone()
        if linha is None:
            return Acao(False, "só falhou, travado ou expirado pode ser reexecutado")
        encerrar_abertas([job_id], Desfecho.INTERROMPIDO, "reexecutado pelo suporte")
        apagar_parciais([job_id])
        if com_mensagem:
            enfileirar(job_id=job_id, tipo=linha[0])
    return Acao(True)


def marcar_como_falhou(*, job_id: int, motivo: str) -> Acao:
    """Give up on a pending or running job; `motivo` becomes its `erro`."""
    motivo = motivo.strip()
    if not motivo:
        return Acao(False, "informe o motivo")
    with transaction.atomic():
        n = RelatorioJob.objects.filter(
            pk=job_id, status__in=(EstadoDoJob.PENDENTE, EstadoDoJob.EXECUTANDO)
        ).update(
            status=EstadoDoJob.FALHOU,
            erro=motivo,
            # An earlier attempt's traceback would read as the cause; it is not.
            erro_detalhe="marcado como falhou pelo suporte",
            checkpoint=None,
            concluido_em=Now(),
            proxima_tentativa_em=None,
            enfileirado_em=None,
        )
        encerrar_abertas([job_id] if n else [], Desfecho.INTERROMPIDO, motivo)
        apagar_parciais([job_id] if n else [])
        saida.registrar_fim_de_jobs(job_ids=[job_id] if n else [])
    if n == 0:
        return Acao(False, "só pendente ou executando pode ser marcado como falhou")
    despachar_do_job(job_id)
    return Acao(True)


def expirar_resultado(*, job_id: int) -> Acao:
    """End a result's validity now: the next request recomputes it, and the
    download links sent for it stop opening (410); its stored files go."""
    with transaction.atomic():
        # Just before now(): the seed's restart test is `expira_em < now()`.
        expirados = list(
            RelatorioJob.objects.filter(
                pk=job_id, status=EstadoDoJob.PRONTO, expira_em__gt=Now()
            )
            .values_list("concluido_em", flat=True)
            .select_for_update(no_key=True)
        )
        if not expirados:
            return Acao(False, "só resultado pronto e válido pode expirar")
        RelatorioJob.objects.filter(pk=job_id).update(
            expira_em=Agora() - timedelta(microseconds=1)
        )
        if expirados[0] is not None:
            links.revogar(job_id=job_id, concluido_em=expirados[0])
        arquivos.esquecer(job_id=job_id)
    return Acao(True)


def _status(cursor: CursorWrapper, job_id: int) -> str | None:
    cursor.execute("SELECT status FROM relatorio_jobs WHERE id = %s", [job_id])
    linha = cursor.fetchone()
    return None if linha is None else str(linha[0])
