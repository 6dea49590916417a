"""The job lifecycle: the only code that changes relatorio_jobs.

Views, admin actions, tasks and commands call these functions; none of them
saves a job itself. Every transition is a guarded UPDATE that reports whether
it won. Every write a worker makes is fenced by its attempt (`Tentativa`: the
attempt number and the claim's timestamp, since a restart resets the number),
so a worker that lost its job can never overwrite the row.

Tenant slots. At most RELATORIOS_MAX_EXECUTANDO_POR_TENANT jobs of a tenant
are "in flight": running, or pending with a queue message. A job beyond that
waits without a message (`enfileirado_em` NULL) and is dispatched, oldest
first, when a slot frees. So one tenant's hundred jobs never stand in the
queue in front of another tenant's one. Slot and cap decisions are taken under
a lock on the tenant's row (FOR NO KEY UPDATE: it does not block the foreign
key checks of inserts), so concurrent submits and claims cannot overshoot.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models.functions import Collate, Now
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.tasks import async_task

from relatorios import fila, logs, metricas, normalizacao, notificacoes, tipos
from relatorios.consultas import (
    COLUNAS_ESTADO,
    JobEstado,
    json_do_banco,
    ler_contando,
)
from relatorios.fila import BrokerComAtraso
from relatorios.models import (
    Desfecho,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
    Status,
)
from relatorios.models.jobs import Agora

if TYPE_CHECKING:
    from relatorios.api.limites import Contagem

logger = logging.getLogger(__name__)

TAREFA = "relatorios.tasks.executar_relatorio"

# What a job forgets when it starts over (seed 000's restart, admin's rerun).
_RECOMECO = """
    status = 'pendente', tentativas = 0, erro = NULL, erro_detalhe = NULL,
    resultado = NULL, checkpoint = NULL, criado_em = now(), iniciado_em = NULL,
    heartbeat_em = NULL, concluido_em = NULL, expira_em = NULL, progresso = 0,
    proxima_tentativa_em = NULL
"""


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


@dataclass(frozen=True)
class Tentativa:
    """One attempt at a job: the fence of every write its worker makes."""

    job_id: int
    numero: int
    iniciado_em: datetime


@dataclass(frozen=True)
class JobReivindicado:
    """A job a worker now owns, for one attempt."""

    tentativa: Tentativa
    tenant_id: int
    tipo: str
    params: dict[str, Any]
    fuso_horario: str
    checkpoint: dict[str, Any] | None
    # The X-Request-ID of the request behind it, for the worker's log lines.
    request_id: str | None = None
    # First attempt only: seconds from the request (or restart) to this claim.
    espera_s: float | None = None


@dataclass(frozen=True)
class Acao:
    """Outcome of a support action on one job: done, or why not."""

    feita: bool
    motivo: str = ""


@dataclass
class Varredura:
    """What one sweep did."""

    orfaos_devolvidos: int = 0
    orfaos_falhos: int = 0
    despachados: int = 0
    reenfileirados: int = 0


# --- Requests ------------------------------------------------------------------


def submeter(
    *,
    tenant_id: int,
    tipo: str,
    params_brutos: Any,
    usuario_id: int | None,
    request_id: str | None = None,
    contagem: Contagem | None = None,
) -> Submissao:
    """Accept a report request (see `_submeter`), counting its outcome.

    `request_id` (default: the current request's, relatorios/logs.py) is
    stored with a job this request creates or restarts. `contagem`: the API
    limit's count, carried by the read by chave (relatorios/api/limites.py);
    over the limit, its 429 is raised before anything is written.
    """
    try:
        submissao = _submeter(
            tenant_id=tenant_id,
            tipo=tipo,
            params_brutos=params_brutos,
            usuario_id=usuario_id,
            request_id=request_id or logs.request_id_atual(),
            contagem=contagem,
        )
    except (normalizacao.ErroDeParametro, LimiteDePendentes):
        metricas.submissao(tipo=tipo, desfecho="rejeitado")
        raise
    if not submissao.criado:
        desfecho = "reaproveitado"
    else:
        desfecho = "reiniciado" if submissao.reiniciado else "novo"
    metricas.submissao(tipo=tipo, desfecho=desfecho)
    return submissao


def _submeter(
    *,
    tenant_id: int,
    tipo: str,
    params_brutos: Any,
    usuario_id: int | None,
    request_id: str | None,
    contagem: Contagem | None,
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

    A new submit is two round trips (read, function), a hit one.
    """
    tipo_relatorio = tipos.obter(tipo)
    params = tipo_relatorio.normalizar(params_brutos)
    chave = normalizacao.chave(tenant_id, tipo, params)
    for _ in range(3):
        atual, reiniciavel, job_id = _ler_por_chave(
            chave=chave, tenant_id=tenant_id, contagem=contagem
        )
        contagem = None  # counted once, by the first read
        if atual is not None and not reiniciavel:
            logger.info(
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
                },
            )
            return Submissao(job=novo, criado=True, reiniciado=reiniciado)
    # Three lost races in a row on one key means the row keeps flipping between
    # restartable and not; say so instead of looping.
    raise RuntimeError(f"submit did not settle for chave {chave}")


# --- The worker's side -----------------------------------------------------------


def reivindicar(*, job_id: int, trabalhador: str = "") -> JobReivindicado | None:
    """Take a pending, due job for one attempt, or None.

    (`status = 'pendente' COLLATE "C"` in lookups by id: the same test, but one
    the planner cannot match to the pending-only partial indexes. Otherwise,
    with statistics older than a burst, it picks them, believing them nearly
    empty, and reads every pending row to find one id: 91 ms instead of
    0.2 ms per claim with 20,000 pending, measured.)

    1. Lock the job's tenant (only if the job is pending at all).
    2. One guarded UPDATE claims it if it is still pending, its retry is due,
       and the tenant runs fewer than its maximum: the count is a subquery of
       the same statement, taken after the lock, so concurrent claims of one
       tenant cannot both see a free slot.
    3. Due but refused for the limit: it loses its message (`enfileirado_em`
       NULL) and waits for the dispatch when a slot frees.
    4. Claimed: the attempt opens in the ledger (relatorio_tentativas) in the
       same transaction; `trabalhador` (host:pid) says who runs it.

    A second delivery of the same message finds nothing to claim.

    Steps 1-4 are one call of the database function `relatorios_reivindicar`
    (migration 0015): one round trip, atomic on its own.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM relatorios_reivindicar(%s::bigint, %s::bigint, %s::text)",
            [job_id, settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT, trabalhador],
        )
        desfecho, *linha = cursor.fetchone()
    if desfecho == "sem_vaga":
        logger.info("job aguarda vaga do tenant", extra={"job_id": job_id})
    if desfecho != "reivindicado":
        return None
    return JobReivindicado(
        tentativa=Tentativa(job_id=linha[0], numero=linha[1], iniciado_em=linha[2]),
        tenant_id=linha[3],
        tipo=linha[4],
        params=json_do_banco(linha[5]),
        fuso_horario=linha[6],
        checkpoint=_checkpoint(json_do_banco(linha[7]), json_do_banco(linha[8])),
        request_id=linha[9],
        espera_s=None if linha[10] is None else float(linha[10]),
    )


def batimento(*, tentativa: Tentativa) -> bool:
    """Prove the attempt is alive; False once the job is no longer this attempt's."""
    return _na_tentativa(tentativa).update(heartbeat_em=Now()) == 1


def registrar_progresso(
    *,
    tentativa: Tentativa,
    progresso: int,
    partes: list[Any],
    feitas: int,
    parcial: Any,
) -> bool:
    """Record chunk number `feitas` (from 1) as done: its partial result and
    the progress.

    `checkpoint` holds the split and the count of chunks done, so a retry can
    tell whether the chunks it would compute are the ones recorded; the
    partial result is a row of its own. One statement, constant in size
    whatever the number of chunks done.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH job AS (
                UPDATE relatorio_jobs
                   SET progresso = %(progresso)s,
                       heartbeat_em = now(),
                       checkpoint = jsonb_build_object(
                           'partes', %(partes)s::jsonb,
                           'feitas', %(feitas)s::int)
                 WHERE id = %(id)s AND status = 'executando' COLLATE "C"
                   AND tentativas = %(numero)s AND iniciado_em = %(iniciado_em)s
                RETURNING id
            )
            INSERT INTO relatorio_parciais (job_id, parte, parcial)
            SELECT id, %(feitas)s::int - 1, %(parcial)s::jsonb FROM job
            ON CONFLICT (job_id, parte) DO UPDATE SET parcial = EXCLUDED.parcial
            """,
            {
                "progresso": max(0, min(100, progresso)),
                "partes": json.dumps(partes),
                "feitas": feitas,
                "parcial": json.dumps(parcial),
                "id": tentativa.job_id,
                "numero": tentativa.numero,
                "iniciado_em": tentativa.iniciado_em,
            },
        )
        return cursor.rowcount == 1


def descartar_checkpoint(*, tentativa: Tentativa) -> bool:
    """Forget chunks that no longer match the request (e.g. stores changed)."""
    with transaction.atomic():
        if _na_tentativa(tentativa).update(checkpoint=None, progresso=0) != 1:
            return False
        _apagar_parciais([tentativa.job_id])
    return True


def concluir(*, tentativa: Tentativa, resultado: Any, validade_s: int) -> bool:
    """Finish the attempt with its result, valid for `validade_s` seconds.

    Every job ends here, so it is one statement (one round trip, atomic on its
    own): the fenced update, the ledger's close, the partial results' removal,
    the notifications of the end (outbox rows for the tenant's webhooks and
    the job's email subscribers, if any), and whether the tenant has a job
    waiting for the slot this one frees. Only when notifications were written
    does a second transaction follow, with their queue messages (a message
    lost in between is replaced by `notificacoes.varrer`).

    A prepared statement (`banco.preparadas`): its text is constant, and
    parsing and planning it cost as much as running it.
    """
    from relatorios.banco import preparadas

    with preparadas.cursor() as cursor:
        cursor.execute(
            f"""
            WITH job AS (
                UPDATE relatorio_jobs
                   SET status = 'pronto', resultado = %(resultado)s::jsonb,
                       progresso = 100, checkpoint = NULL, concluido_em = now(),
                       expira_em = now() + make_interval(secs => %(validade)s),
                       erro = NULL, erro_detalhe = NULL, enfileirado_em = NULL
                 WHERE id = %(id)s AND status = 'executando' COLLATE "C"
                   AND tentativas = %(numero)s AND iniciado_em = %(iniciado_em)s
                RETURNING id, tenant_id, tipo, status, erro, concluido_em
            ), fim AS (
                SELECT * FROM job
            ), {notificacoes.sql_entregas_de_jobs()}, historico AS (
                UPDATE relatorio_tentativas
                   SET terminado_em = now(), desfecho = 'pronto'
                 WHERE job_id = (SELECT id FROM job)
                   AND iniciado_em = %(iniciado_em)s AND terminado_em IS NULL
            ), parciais AS (
                DELETE FROM relatorio_parciais WHERE job_id = (SELECT id FROM job)
            )
            SELECT job.tenant_id,
                   EXISTS (SELECT 1 FROM relatorio_jobs w
                            WHERE w.tenant_id = job.tenant_id
                              AND w.status = 'pendente' AND w.enfileirado_em IS NULL),
                   ARRAY(SELECT id FROM novas)
              FROM job
            """,
            {
                "resultado": json.dumps(resultado, cls=DjangoJSONEncoder),
                "validade": validade_s,
                "id": tentativa.job_id,
                "numero": tentativa.numero,
                "iniciado_em": tentativa.iniciado_em,
                "url_base": settings.RELATORIOS_URL_BASE,
            },
        )
        linha = cursor.fetchone()
    if linha is None:
        return False
    tenant_id, ha_espera, entregas = linha
    if entregas:
        with transaction.atomic():
            notificacoes.enfileirar(entrega_ids=list(entregas))
    if ha_espera:
        despachar(tenant_id=tenant_id)
    return True


def falhar(*, tentativa: Tentativa, erro: str, detalhe: str | None) -> bool:
    """End the attempt as failed for good: `erro` for tenants, `detalhe` for staff."""
    with transaction.atomic():
        ganhou = (
            _na_tentativa(tentativa).update(
                status=Status.FALHOU,
                erro=erro,
                erro_detalhe=detalhe,
                concluido_em=Now(),
                enfileirado_em=None,
            )
            == 1
        )
        if ganhou:
            _encerrar_tentativa(tentativa, Desfecho.FALHOU, erro)
            _apagar_parciais([tentativa.job_id])
            notificacoes.registrar_fim_de_jobs(job_ids=[tentativa.job_id])
    if ganhou:
        _despachar_do_job(tentativa.job_id)
    return ganhou


def adiar(*, tentativa: Tentativa, erro: str, detalhe: str | None) -> str | None:
    """A transient failure: retry later with backoff, or fail after the last attempt.

    Returns the new status (`pendente` or `falhou`), or None if the fence lost.
    The delayed message is written with the row, so the retry survives a
    restart of every cluster: it is just a queue row not visible before its time.
    """
    if tentativa.numero >= settings.RELATORIOS_MAX_TENTATIVAS:
        final = f"{erro} (após {tentativa.numero} tentativas)"
        return (
            Status.FALHOU
            if falhar(tentativa=tentativa, erro=final, detalhe=detalhe)
            else None
        )
    quando = agora_do_banco() + timedelta(
        seconds=atraso_de_retentativa(tentativa.numero)
    )
    ganhou = _de_volta_a_fila(
        tentativa,
        Desfecho.ADIADO,
        quando=quando,
        erro=erro,
        campos={"erro": erro, "erro_detalhe": detalhe},
    )
    return Status.PENDENTE if ganhou else None


def devolver(*, tentativa: Tentativa) -> bool:
    """Hand a running job back at once (graceful shutdown), without using up an
    attempt: the cluster stopping is not the job failing. The checkpoint stays,
    so whoever takes it next resumes."""
    return _de_volta_a_fila(
        tentativa, Desfecho.DEVOLVIDO, campos={"tentativas": tentativa.numero - 1}
    )


def _de_volta_a_fila(
    tentativa: Tentativa,
    desfecho: str,
    *,
    campos: dict[str, Any],
    quando: datetime | None = None,
    erro: str | None = None,
) -> bool:
    """The attempt ends with the job pending again and a new message, due at
    `quando` (None: now), in one transaction; False if the fence lost."""
    with transaction.atomic():
        if (
            _na_tentativa(tentativa).update(
                status=Status.PENDENTE,
                proxima_tentativa_em=quando,
                enfileirado_em=Now(),
                **campos,
            )
            != 1
        ):
            return False
        _encerrar_tentativa(tentativa, desfecho, erro)
        tipo = RelatorioJob.objects.values_list("tipo", flat=True).get(
            pk=tentativa.job_id
        )
        _enfileirar(job_id=tentativa.job_id, tipo=tipo, quando=quando)
    return True


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
            _enfileirar(job_id=job_id, tipo=linha[0])
    return linha is not None


def atraso_de_retentativa(numero: int) -> float:
    """Exponential backoff with full jitter: base * 2^(n-1) * [1, 2), capped."""
    base = settings.RELATORIOS_BACKOFF_S * 2 ** max(0, numero - 1)
    return min(settings.RELATORIOS_BACKOFF_MAX_S, base * (1 + random.random()))


# --- The sweep -------------------------------------------------------------------


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


def despachar(*, tenant_id: int) -> int:
    """Give queue messages to the tenant's oldest waiting jobs, up to its free slots."""
    with transaction.atomic(), connection.cursor() as cursor:
        _travar_tenant(cursor, tenant_id)
        _, em_voo = _ocupacao(cursor, tenant_id)
        livres = settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT - em_voo
        if livres <= 0:
            return 0
        cursor.execute(
            """
            UPDATE relatorio_jobs SET enfileirado_em = now()
             WHERE id IN (SELECT id FROM relatorio_jobs
                           WHERE tenant_id = %s AND status = 'pendente'
                             AND enfileirado_em IS NULL
                           ORDER BY criado_em LIMIT %s)
            RETURNING id, tipo
            """,
            [tenant_id, livres],
        )
        despachados = cursor.fetchall()
        for job_id, tipo in despachados:
            _enfileirar(job_id=job_id, tipo=tipo)
    return len(despachados)


def _varrer_orfaos(resultado: Varredura) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # The CASE mirrors `adiar`: same messages, same backoff, computed here
        # for many rows at once.
        cursor.execute(
            """
            WITH orfaos AS (
                SELECT id FROM relatorio_jobs
                 WHERE status = 'executando'
                   AND heartbeat_em < now() - make_interval(secs => %(orfao)s)
                   FOR UPDATE SKIP LOCKED
            ), decididos AS (
                SELECT j.id, j.tentativas < %(max)s AS de_novo, j.tentativas
                  FROM relatorio_jobs j JOIN orfaos o USING (id)
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
                       THEN now() + make_interval(secs => least(%(teto)s,
                                     %(base)s * power(2, greatest(d.tentativas - 1, 0))
                                     * (1 + random()))) END,
                   concluido_em = CASE WHEN d.de_novo THEN NULL ELSE now() END,
                   enfileirado_em = CASE WHEN d.de_novo THEN now() END
              FROM decididos d
             WHERE j.id = d.id AND j.status = 'executando'
            RETURNING j.id, j.tenant_id, j.tipo, j.status, j.proxima_tentativa_em
            """,
            {
                "orfao": settings.RELATORIOS_ORFAO_APOS_S,
                "max": settings.RELATORIOS_MAX_TENTATIVAS,
                "base": settings.RELATORIOS_BACKOFF_S,
                "teto": settings.RELATORIOS_BACKOFF_MAX_S,
            },
        )
        linhas = cursor.fetchall()
        _encerrar_abertas(
            [linha[0] for linha in linhas],
            Desfecho.ORFAO,
            "o worker parou de responder",
        )
        falhos = [linha[0] for linha in linhas if linha[3] == Status.FALHOU]
        _apagar_parciais(falhos)
        notificacoes.registrar_fim_de_jobs(job_ids=falhos)
        metricas.orfaos(tipos_e_status=[(linha[2], linha[3]) for linha in linhas])
        for job_id, tenant_id, tipo, status, quando in linhas:
            if status == Status.PENDENTE:
                _enfileirar(job_id=job_id, tipo=tipo, quando=quando)
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
            status=Status.PENDENTE, enfileirado_em__lt=Now() - timedelta(seconds=limite)
        )
        .exclude(proxima_tentativa_em__gt=Now() - timedelta(seconds=limite))
        .values_list("id", flat=True)[:1000]
    )
    if not candidatos:
        return 0
    presentes = _jobs_na_fila()
    perdidos = [job_id for job_id in candidatos if job_id not in presentes]
    if not perdidos:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        # Guarded: a concurrent sweep that re-enqueued first moved enfileirado_em.
        cursor.execute(
            """
            UPDATE relatorio_jobs SET enfileirado_em = now()
             WHERE id = ANY(%s) AND status = 'pendente' COLLATE "C"
               AND enfileirado_em < now() - make_interval(secs => %s)
            RETURNING id, tipo
            """,
            [perdidos, limite],
        )
        linhas = cursor.fetchall()
        for job_id, tipo in linhas:
            _enfileirar(job_id=job_id, tipo=tipo)
            logger.warning(
                "mensagem perdida: job reenfileirado",
                extra={"evento": "reenfileirado", "job_id": job_id, "tipo": tipo},
            )
    metricas.reenfileirados(len(linhas))
    return len(linhas)


def _jobs_na_fila() -> set[int]:
    """Jobs with a message still waiting in the queue (not taken by a cluster).

    Messages are signed pickles, so they are read and decoded here; the queue
    holds at most a few per tenant (see the slots above), so this stays small.
    """
    presentes: set[int] = set()
    for mensagem in OrmQ.objects.filter(lock__lte=Now()):
        tarefa = mensagem.task
        if tarefa.get("func") == TAREFA and tarefa.get("args"):
            presentes.add(int(tarefa["args"][0]))
    return presentes


# --- Support actions (admin) -------------------------------------------------------


def reexecutar(*, job_id: int) -> Acao:
    """Start a failed, stuck or expired job over, under the API's rules.

    A stuck job's worker is fenced out (its claim timestamp no longer matches).
    The tenant's pending cap applies, and the job takes a slot or waits for one.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        tenant_id = _travar_tenant_do_job(cursor, job_id)
        if tenant_id is None:
            return Acao(False, "job não encontrado")
        pendentes, em_voo = _ocupacao(cursor, tenant_id)
        if pendentes >= settings.RELATORIOS_MAX_PENDENTES_POR_TENANT:
            return Acao(False, "o tenant está no limite de relatórios pendentes")
        # A stuck job is already counted in flight: it keeps its slot.
        enfileirar = (
            _status(cursor, job_id) == Status.EXECUTANDO
            or em_voo < settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT
        )
        cursor.execute(
            f"""
            UPDATE relatorio_jobs SET {_RECOMECO},
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
                "enfileirar": enfileirar,
                "orfao": settings.RELATORIOS_ORFAO_APOS_S,
            },
        )
        linha = cursor.fetchone()
        if linha is None:
            return Acao(False, "só falhou, travado ou expirado pode ser reexecutado")
        _encerrar_abertas([job_id], Desfecho.INTERROMPIDO, "reexecutado pelo suporte")
        _apagar_parciais([job_id])
        if enfileirar:
            _enfileirar(job_id=job_id, tipo=linha[0])
    return Acao(True)


def marcar_como_falhou(*, job_id: int, motivo: str) -> Acao:
    """Give up on a pending or running job; `motivo` becomes its `erro`."""
    motivo = motivo.strip()
    if not motivo:
        return Acao(False, "informe o motivo")
    with transaction.atomic():
        n = RelatorioJob.objects.filter(
            pk=job_id, status__in=(Status.PENDENTE, Status.EXECUTANDO)
        ).update(
            status=Status.FALHOU,
            erro=motivo,
            # An earlier attempt's traceback would read as the cause; it is not.
            erro_detalhe="marcado como falhou pelo suporte",
            checkpoint=None,
            concluido_em=Now(),
            proxima_tentativa_em=None,
            enfileirado_em=None,
        )
        _encerrar_abertas([job_id] if n else [], Desfecho.INTERROMPIDO, motivo)
        _apagar_parciais([job_id] if n else [])
        notificacoes.registrar_fim_de_jobs(job_ids=[job_id] if n else [])
    if n == 0:
        return Acao(False, "só pendente ou executando pode ser marcado como falhou")
    _despachar_do_job(job_id)
    return Acao(True)


def expirar_resultado(*, job_id: int) -> Acao:
    """End a result's validity now: the next request recomputes it."""
    # Just before now(): the seed's restart test is `expira_em < now()`.
    n = RelatorioJob.objects.filter(
        pk=job_id, status=Status.PRONTO, expira_em__gt=Now()
    ).update(expira_em=Agora() - timedelta(microseconds=1))
    return Acao(True) if n else Acao(False, "só resultado pronto e válido pode expirar")


# --- Internals ---------------------------------------------------------------------


def _na_tentativa(tentativa: Tentativa) -> Any:
    # The fence: only the attempt that claimed the job may write to it. The
    # status is compared under COLLATE "C" for the reason in `reivindicar`: a
    # lookup by id must never become a walk of the running-only index.
    return RelatorioJob.objects.alias(status_c=Collate("status", "C")).filter(
        pk=tentativa.job_id,
        status_c=Status.EXECUTANDO,
        tentativas=tentativa.numero,
        iniciado_em=tentativa.iniciado_em,
    )


def _encerrar_tentativa(
    tentativa: Tentativa, desfecho: str, erro: str | None = None
) -> None:
    RelatorioTentativa.objects.filter(
        job_id=tentativa.job_id,
        iniciado_em=tentativa.iniciado_em,
        terminado_em__isnull=True,
    ).update(terminado_em=Now(), desfecho=desfecho, erro=erro)


def _apagar_parciais(job_ids: list[int]) -> None:
    # A job that finished, failed for good or starts over resumes nothing.
    if job_ids:
        RelatorioParcial.objects.filter(job_id__in=job_ids).delete()


def _checkpoint(salvo: Any, parciais: Any) -> dict[str, Any] | None:
    """The checkpoint as the worker resumes from it: the split, and the
    partial results of the chunks done, in order."""
    parciais = parciais or []
    if not salvo or salvo.get("feitas") != len(parciais):
        return None  # nothing done, or not all of it there: start over
    return {"partes": salvo.get("partes"), "parciais": parciais}


def _encerrar_abertas(job_ids: list[int], desfecho: str, erro: str) -> None:
    """Close the open attempt of jobs taken from their workers by someone else."""
    if job_ids:
        RelatorioTentativa.objects.filter(
            job_id__in=job_ids, terminado_em__isnull=True
        ).update(terminado_em=Now(), desfecho=desfecho, erro=erro)


def _travar_tenant(cursor: CursorWrapper, tenant_id: int) -> None:
    cursor.execute("SELECT 1 FROM tenants WHERE id = %s FOR NO KEY UPDATE", [tenant_id])


def _travar_tenant_do_job(cursor: CursorWrapper, job_id: int) -> int | None:
    cursor.execute(
        """
        SELECT t.id FROM tenants t JOIN relatorio_jobs j ON j.tenant_id = t.id
         WHERE j.id = %s FOR NO KEY UPDATE OF t
        """,
        [job_id],
    )
    linha = cursor.fetchone()
    return None if linha is None else int(linha[0])


def _status(cursor: CursorWrapper, job_id: int) -> str | None:
    cursor.execute("SELECT status FROM relatorio_jobs WHERE id = %s", [job_id])
    linha = cursor.fetchone()
    return None if linha is None else str(linha[0])


def _ocupacao(cursor: CursorWrapper, tenant_id: int) -> tuple[int, int]:
    """(pending jobs, jobs in flight) of a tenant; reads the two partial indexes.

    One subquery per status, each matching one partial index's predicate: a
    single `status IN (...)` matches neither, and the planner walked the
    tenant's whole history on (tenant_id, criado_em) instead (20,000 rows read
    per submit for a tenant with 20,000 finished jobs; tests/test_indices.py).
    """
    cursor.execute(
        """
        SELECT p.pendentes, p.enfileirados + e.executando
          FROM (SELECT count(*) AS pendentes, count(enfileirado_em) AS enfileirados
                  FROM relatorio_jobs
                 WHERE tenant_id = %(tenant)s AND status = 'pendente') AS p,
               (SELECT count(*) AS executando
                  FROM relatorio_jobs
                 WHERE tenant_id = %(tenant)s AND status = 'executando') AS e
        """,
        {"tenant": tenant_id},
    )
    pendentes, em_voo = cursor.fetchone()
    return int(pendentes), int(em_voo)


def _despachar_do_job(job_id: int) -> None:
    # Cheap unlocked check first: most tenants have nobody waiting.
    tenant_id = (
        RelatorioJob.objects.filter(pk=job_id)
        .values_list("tenant_id", flat=True)
        .first()
    )
    if tenant_id is None:
        return
    if RelatorioJob.objects.filter(
        tenant_id=tenant_id, status=Status.PENDENTE, enfileirado_em__isnull=True
    ).exists():
        despachar(tenant_id=tenant_id)


def _ler_por_chave(
    *, chave: str, tenant_id: int, contagem: Contagem | None = None
) -> tuple[JobEstado | None, bool, int]:
    """(the job, whether it may start over, the id a write would use).

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
        COALESCE(id, nextval(pg_get_serial_sequence('relatorio_jobs', 'id')))"""
    linha = ler_contando(
        contagem,
        colunas=colunas,
        juncao="relatorio_jobs ON chave = %s",
        parametros=[chave],
    )
    if linha[0] is None:
        return None, False, int(linha[12])
    if linha[11] != tenant_id:
        raise RuntimeError(f"chave {chave} belongs to another tenant")
    return JobEstado.da_linha(linha), bool(linha[10]), int(linha[12])


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
) -> tuple[JobEstado, bool] | None:
    """Steps 3-4 of `submeter`: (the job, whether it got its message), or None
    when another request's row stands in the way (read again).

    Raw SQL because the concurrency lives in the function (migration 0014 says
    why it is a function); the message is signed here, by django-q2's own
    signer (`fila.pacote`), and inserted there.
    """
    mensagem = fila.pacote(
        TAREFA, job_id, nome=f"relatorio-{job_id}", timeout=_timeout_da_tarefa(tipo)
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
                       %(request_id)s::text
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
                "max_pendentes": settings.RELATORIOS_MAX_PENDENTES_POR_TENANT,
                "max_em_voo": settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT,
                "fila": Conf.CLUSTER_NAME,
                "mensagem": mensagem,
                "request_id": request_id,
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


def verificar_lojas(*, tenant_id: int, lojas: list[str]) -> None:
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


def _timeout_da_tarefa(tipo: str) -> int:
    return int(tipos.obter(tipo).timeout() + settings.RELATORIOS_MARGEM_HARD_STOP_S)


def _enfileirar(*, job_id: int, tipo: str, quando: datetime | None = None) -> None:
    # The ORM broker writes the message through the same connection, inside the
    # caller's transaction: it commits or rolls back with the job's row.
    opcoes: dict[str, Any] = {"timeout": _timeout_da_tarefa(tipo)}
    if quando is not None:
        opcoes["broker"] = BrokerComAtraso(quando)
    async_task(TAREFA, job_id, task_name=f"relatorio-{job_id}", q_options=opcoes)


def agora_do_banco() -> datetime:
    # Delays and schedules are relative to the database clock, which every
    # guard compares with (the scheduler's tests inject theirs instead).
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]
