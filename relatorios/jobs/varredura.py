"""The sweep: what nobody else will fix, safe with any number of copies."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import Now

from relatorios.fila import mensagens
from relatorios.jobs.ciclo import (
    apagar_parciais,
    atraso_de_retentativa,
    encerrar_abertas,
)
from relatorios.jobs.vagas import despachar, enfileirar
from relatorios.models import (
    Desfecho,
    EstadoDoJob,
    RelatorioJob,
)
from relatorios.notificacoes import saida
from relatorios.operacao import metricas

logger = logging.getLogger(__name__)


@dataclass
class Varredura:
    """What one sweep did."""

    orfaos_devolvidos: int = 0
    orfaos_falhos: int = 0
    despachados: int = 0
    reenfileirados: int = 0


def reenviar(*, job_id: int) -> bool:
    """A fresh message for a pending job whose message this cluster will not run."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE relatorio_jobs SET enfileirado_em = now()
             WHERE id = %s AND status = 'pendente' COLLATE "C"
               AND enfileirado_em IS NOT NULL
            RETURNING tipo
            """,
            [job_id],
        )
        linha = cursor.fetchone()
        if linha is not None:
            enfileirar(job_id=job_id, tipo=linha[0])
    return linha is not None


def varrer() -> Varredura:
    """One pass over what nobody else will fix; safe with any number of copies.

    1. Orphans: running jobs whose heartbeat is older than the orphan timeout
       go back to pendente with a (delayed) message, or fail after the last
       attempt. SKIP LOCKED plus the re-checked WHERE make each orphan one
       sweep's, and bump nothing twice.
    2. Waiting jobs of tenants with free slots are dispatched (normally the
       finishing job does it; this catches what a crash left behind).
    3. Lost messages: due pending jobs whose message is older than
       RELATORIOS_REENFILEIRAR_APOS_S and no longer waiting in the queue get a
       new one (a duplicate is harmless: the claim is guarded).
    """
    resultado = Varredura()
    _varrer_orfaos(resultado)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT DISTINCT tenant_id FROM relatorio_jobs
             WHERE status = 'pendente' AND enfileirado_em IS NULL
            """
        )
        tenants_com_espera = [t for (t,) in cursor.fetchall()]
    for tenant_id in tenants_com_espera:
        resultado.despachados += despachar(tenant_id=tenant_id)
    resultado.reenfileirados = _reenfileirar_perdidos()
    if any(vars(resultado).values()):
        logger.info("varredura", extra=vars(resultado))
    return resultado


def _varrer_orfaos(resultado: Varredura) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # Locked first, then decided: the backoff is `adiar`'s own Python
        # function (ciclo.atraso_de_retentativa), not a copy of it in SQL.
        cursor.execute(
            """
            SELECT id, tentativas FROM relatorio_jobs
             WHERE status = 'executando'
               AND heartbeat_em < now() - make_interval(secs => %s)
               FOR UPDATE SKIP LOCKED
            """,
            [settings.RELATORIOS_ORFAO_APOS_S],
        )
        orfaos = cursor.fetchall()
        if not orfaos:
            return
        cursor.execute(
            """
            WITH decididos AS (
                SELECT o.id, o.tentativas, o.tentativas < %(max)s AS de_novo,
                       o.atraso
                  FROM unnest(%(ids)s::bigint[], %(tentativas)s::int[],
                              %(atrasos)s::float8[]) AS o(id, tentativas, atraso)
            )
            UPDATE relatorio_jobs AS j
               SET status = CASE WHEN d.de_novo THEN 'pendente' ELSE 'falhou' END,
                   erro = CASE WHEN d.de_novo
                          THEN 'o worker parou de responder'
                          ELSE format(
                              'o worker parou de responder (após %%s tentativas)',
                              d.tentativas) END,
                   erro_detalhe = format(
                       'heartbeat de %%s mais antigo que %%s s; tentativa %%s',
                       j.heartbeat_em, %(orfao)s, d.tentativas),
                   proxima_tentativa_em = CASE WHEN d.de_novo
                       THEN now() + make_interval(secs => d.atraso) END,
                   concluido_em = CASE WHEN d.de_novo THEN NULL ELSE now() END,
                   enfileirado_em = CASE WHEN d.de_novo THEN now() END
              FROM decididos d
             WHERE j.id = d.id AND j.status = 'executando'
            RETURNING j.id, j.tenant_id, j.tipo, j.status, j.proxima_tentativa_em
            """,
            {
                "orfao": settings.RELATORIOS_ORFAO_APOS_S,
                "max": settings.RELATORIOS_MAX_TENTATIVAS,
                "ids": [job_id for job_id, _ in orfaos],
                "tentativas": [tentativas for _, tentativas in orfaos],
                "atrasos": [atraso_de_retentativa(t) for _, t in orfaos],
            },
        )
        linhas = cursor.fetchall()
        encerrar_abertas(
            [linha[0] for linha in linhas],
            Desfecho.ORFAO,
            "o worker parou de responder",
        )
        falhos = [linha[0] for linha in linhas if linha[3] == EstadoDoJob.FALHOU]
        apagar_parciais(falhos)
        saida.registrar_fim_de_jobs(job_ids=falhos)
        metricas.orfaos(tipos_e_status=[(linha[2], linha[3]) for linha in linhas])
        for job_id, tenant_id, tipo, status, quando in linhas:
            if status == EstadoDoJob.PENDENTE:
                enfileirar(job_id=job_id, tipo=tipo, quando=quando)
                resultado.orfaos_devolvidos += 1
            else:
                resultado.orfaos_falhos += 1
            logger.warning(
                "job órfão",
                extra={
                    "evento": "orfao_recuperado",
                    "job_id": job_id,
                    "tenant_id": tenant_id,
                    "tipo": tipo,
                    "desfecho": status,
                },
            )


def _reenfileirar_perdidos() -> int:
    limite = settings.RELATORIOS_REENFILEIRAR_APOS_S
    candidatos = list(
        RelatorioJob.objects.filter(
            status=EstadoDoJob.PENDENTE,
            enfileirado_em__lt=Now() - timedelta(seconds=limite),
        )
        .exclude(proxima_tentativa_em__gt=Now() - timedelta(seconds=limite))
        .values_list("id", flat=True)[:1000]
    )
    linhas = mensagens.reenfileirar_perdidas(
        tarefa=mensagens.TAREFA_RELATORIO,
        candidatas=candidatos,
        reservar="""
            UPDATE relatorio_jobs SET enfileirado_em = now()
             WHERE id = ANY(%s) AND status = 'pendente' COLLATE "C"
               AND enfileirado_em < now() - make_interval(secs => %s)
            RETURNING id, tipo
        """,
        limite_s=limite,
        enfileirar_linhas=_enfileirar_perdidos,
    )
    if linhas:
        metricas.reenfileirados(len(linhas))
    return len(linhas)


def _enfileirar_perdidos(linhas: list[tuple[Any, ...]]) -> None:
    for job_id, tipo in linhas:
        enfileirar(job_id=job_id, tipo=tipo)
        logger.warning(
            "mensagem perdida: job reenfileirado",
            extra={"evento": "reenfileirado", "job_id": job_id, "tipo": tipo},
        )
