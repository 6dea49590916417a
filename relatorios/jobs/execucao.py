"""Running one job inside a django-q2 worker: claim, heartbeat, chunks, outcome.

State changes go through `jobs.ciclo`; this module decides which one:

- success: `concluir`;
- a transient failure (the database connection dropped, a deadlock or
  serialization failure, the statement timeout, django-q2's hard stop):
  `adiar`, which retries with backoff up to RELATORIOS_MAX_TENTATIVAS;
- a permanent failure (a bug or bad data in the report): `falhar` at once;
- the job was taken from this attempt (the sweep declared it an orphan, or
  support marked it failed): stop without writing;
- the cluster is stopping: `devolver`, the job goes back to pendente at once.

A running attempt can be stopped from outside the main thread (the heartbeat
thread noticing the loss, a shutdown signal): the flag is set and the report's
running SQL statement is cancelled, so the main thread stops at once instead
of at the end of a long query.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import psycopg
from django import db
from django.conf import settings
from django.db import connection, connections, transaction
from django.db.backends.utils import CursorWrapper
from django_q.exceptions import TimeoutException

from relatorios import tipos
from relatorios.banco import replica
from relatorios.jobs import ciclo, reuso, varredura
from relatorios.jobs.ciclo import JobReivindicado, Tentativa
from relatorios.operacao import logs, metricas
from relatorios.tipos.base import Contexto, Parcial, Parte, TipoRelatorio

logger = logging.getLogger(__name__)

PERDIDO, DESLIGAMENTO = "perdido", "desligamento"
NIVEL_DO_DESFECHO = {
    "pronto": logging.INFO,
    PERDIDO: logging.INFO,
    "falhou": logging.ERROR,
}
# The `evento` of the "job terminado" line, by outcome.
EVENTO_DO_DESFECHO = {
    "pronto": "concluido",
    "falhou": "falhou",
    "adiado": "adiado",
    PERDIDO: "perdido",
    DESLIGAMENTO: "devolvido",
}


class Interrompido(Exception):
    """The attempt was stopped from outside (see `Execucao.parar`)."""


@dataclass
class Execucao:
    """The attempt this worker process is running, if any."""

    tentativa: Tentativa
    conexao: Any  # the main thread's psycopg connection, to cancel its query
    # The replica's, while the report reads there (cancelled too).
    leitura: Any = None
    motivo: str | None = None
    # Which time limit stopped it, if one did (consulta, parada_forcada).
    timeout: str | None = None
    _trava: threading.Lock = field(default_factory=threading.Lock)

    def parar(self, motivo: str) -> None:
        with self._trava:
            if self.motivo is not None:
                return
            self.motivo = motivo
        for conexao in (self.conexao, self.leitura):
            if conexao is None:
                continue
            try:
                # Thread- and signal-safe: a cancel request on its own socket.
                conexao.cancel_safe(timeout=5)
            except Exception:
                logger.exception(
                    "cancelamento falhou", extra={"job_id": self.tentativa.job_id}
                )


# This worker process's state; a worker runs one job at a time.
_atual: Execucao | None = None
_desligando = False


class Batimento(threading.Thread):
    """Refreshes heartbeat_em, on its own connection, while this process runs
    an attempt.

    Independent of the report's progress, so a long SQL statement does not look
    like a dead worker. When the fenced update touches no row the job is no
    longer this attempt's, and the attempt is stopped at once.

    One thread per worker process, started with its first job, ticking every
    `intervalo_s`: each tick beats for the attempt running then, if any. So
    an attempt's beats are at most `intervalo_s` apart from its claim on, as
    with a thread per attempt, and handing an attempt over (`acompanhar`,
    `soltar`) only sets an attribute: starting and joining a thread per job,
    or waking one at each job's start and end, cost about 1 ms of each job's
    wall time on a loaded host (B3). A beat runs holding the lock, so
    `soltar` returns only when no beat of the attempt is running.
    """

    def __init__(self, intervalo_s: float) -> None:
        super().__init__(name="batimento", daemon=True)
        self.intervalo_s = intervalo_s
        self._trava = threading.Lock()
        self._execucao: Execucao | None = None

    def acompanhar(self, execucao: Execucao) -> None:
        with self._trava:
            self._execucao = execucao

    def soltar(self) -> None:
        # A beat stuck on an unreachable database is not waited for longer
        # than a thread per attempt was joined.
        preso = not self._trava.acquire(timeout=10)
        self._execucao = None
        if not preso:
            self._trava.release()

    def run(self) -> None:
        perdida: Execucao | None = None
        conectado = False
        while True:
            time.sleep(self.intervalo_s)
            with self._trava:
                execucao = self._execucao
                if execucao is not None and execucao is not perdida:
                    conectado = True
                    if not self._bater(execucao):
                        perdida = execucao
            if execucao is None and conectado:
                # Connections are per thread: this closes only the
                # heartbeat's own, while the process is idle.
                db.connections.close_all()
                conectado = False

    def _bater(self, execucao: Execucao) -> bool:
        """One beat; False once the attempt was lost (and stopped)."""
        try:
            vivo = ciclo.batimento(tentativa=execucao.tentativa)
        except db.DatabaseError:
            # Retried on the next beat; if the database stays away, the
            # orphan sweep decides.
            logger.warning(
                "batimento falhou", extra={"job_id": execucao.tentativa.job_id}
            )
            db.connection.close()
            return True
        if not vivo:
            execucao.parar(PERDIDO)
        return vivo


# This worker process's heartbeat thread, and the process it belongs to (a
# thread does not survive a fork).
_batimento: tuple[int, Batimento] | None = None


def _batimento_do_processo() -> Batimento:
    global _batimento
    if _batimento is None or _batimento[0] != os.getpid():
        batimento = Batimento(settings.RELATORIOS_BATIMENTO_S)
        batimento.start()
        _batimento = (os.getpid(), batimento)
    return _batimento[1]


def executar(*, job_id: int) -> None:
    """Claim the job and run it to an outcome; a lost claim does nothing."""
    global _atual
    if _desligando:
        # This cluster is stopping: leave the job to another one.
        varredura.reenviar(job_id=job_id)
        return
    # host:pid, for the attempts ledger (read here: this module is imported
    # before django-q2 forks its workers).
    trabalhador = f"{socket.gethostname()}:{os.getpid()}"
    job = ciclo.reivindicar(job_id=job_id, trabalhador=trabalhador)
    if job is None:
        logger.info("job não reivindicado", extra={"job_id": job_id})
        return
    inicio = time.monotonic()
    # Every line about this job, from every thread's records, carries the id
    # of the request behind it (relatorios/operacao/logs.py).
    contexto = logs.definir_request_id(job.request_id)
    campos = {
        "job_id": job_id,
        "tenant_id": job.tenant_id,
        "tipo": job.tipo,
        "tentativa": job.tentativa.numero,
    }
    logger.info("job iniciado", extra={**campos, "evento": "iniciado"})
    metricas.job_iniciado(tipo=job.tipo, espera_s=job.espera_s)
    metricas.EXECUTANDO_AQUI.inc()
    connection.ensure_connection()
    execucao = Execucao(tentativa=job.tentativa, conexao=connection.connection)
    batimento = _batimento_do_processo()
    _atual = execucao
    batimento.acompanhar(execucao)
    desfecho = "parada forçada"
    try:
        desfecho = _executar(job, execucao)
    finally:
        _atual = None
        batimento.soltar()
        duracao = time.monotonic() - inicio
        metricas.EXECUTANDO_AQUI.dec()
        metricas.job_terminado(
            tipo=job.tipo,
            desfecho=desfecho,
            duracao_s=duracao,
            timeout=execucao.timeout,
        )
        logger.log(
            NIVEL_DO_DESFECHO.get(desfecho, logging.WARNING),
            "job terminado",
            extra={
                **campos,
                "evento": EVENTO_DO_DESFECHO.get(desfecho, "interrompido"),
                "desfecho": desfecho,
                "duracao_ms": round(duracao * 1000),
            },
        )
        logs.restaurar_request_id(contexto)
    if desfecho == DESLIGAMENTO:
        # Handed back; this worker takes nothing more.
        raise SystemExit(0)


def _executar(job: JobReivindicado, execucao: Execucao) -> str:
    tentativa = job.tentativa
    try:
        tipo = tipos.obter(job.tipo)
        resultado = _gerar(tipo, job, execucao)
        ganhou = ciclo.concluir(
            tentativa=tentativa, resultado=resultado, validade_s=tipo.validade()
        )
        return "pronto" if ganhou else PERDIDO
    except TimeoutException:
        # django-q2's hard stop (a SystemExit): record it, then let the worker die.
        execucao.timeout = "parada_forcada"
        _reconectar()
        ciclo.adiar(
            tentativa=tentativa,
            erro="o relatório excedeu o tempo limite e foi interrompido",
            detalhe=traceback.format_exc(),
        )
        raise
    except Exception as exc:
        motivo = execucao.motivo
        _reconectar()
        if motivo == PERDIDO:
            return PERDIDO
        if motivo == DESLIGAMENTO:
            ciclo.devolver(tentativa=tentativa)
            return DESLIGAMENTO
        erro, detalhe = mensagem_para_tenant(exc), traceback.format_exc()
        if isinstance(exc.__cause__ or exc, psycopg.errors.QueryCanceled):
            execucao.timeout = "consulta"
        if transitoria(exc):
            status = ciclo.adiar(tentativa=tentativa, erro=erro, detalhe=detalhe)
            return "adiado" if status == "pendente" else str(status or PERDIDO)
        ciclo.falhar(tentativa=tentativa, erro=erro, detalhe=detalhe)
        return "falhou"


def transitoria(exc: BaseException) -> bool:
    """Worth another attempt: the database or the clock failed, not the report."""
    return isinstance(
        exc,
        (
            db.OperationalError,
            db.InterfaceError,
            psycopg.OperationalError,
            TimeoutException,
        ),
    )


def mensagem_para_tenant(exc: BaseException) -> str:
    """What a client may be shown: what failed, never a traceback."""
    causa = exc.__cause__ or exc
    if isinstance(causa, psycopg.errors.QueryCanceled):
        return "o relatório excedeu o tempo limite de consulta"
    if isinstance(
        causa, (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
    ):
        return "conflito temporário no banco de dados"
    if transitoria(exc):
        return "a conexão com o banco de dados falhou durante o relatório"
    primeira_linha = (str(exc).strip().splitlines() or [""])[0][:200]
    nome = type(exc).__name__
    return f"{nome}: {primeira_linha}" if primeira_linha else nome


class Acompanhamento:
    """How `calcular` resumes from and records into a job's checkpoint."""

    def retomar(self, partes: list[Parte]) -> list[Parcial]:
        return []

    def parte_pronta(self, feitas: int, partes: list[Parte], parcial: Parcial) -> None:
        pass


def calcular(
    tipo: TipoRelatorio,
    ctx: Contexto,
    params: dict[str, Any],
    *,
    timeout_s: float,
    acompanhamento: Acompanhamento | None = None,
    banco: str = replica.PRIMARIO,
) -> dict[str, Any]:
    """Run a report chunk by chunk, skipping the chunks already checkpointed.

    Splitting into chunks is at most one small query (most types need none),
    so it runs as it is. A chunk still valid in the chunk store is taken from
    it (`jobs.reuso`), else computed (and stored, when the type allows);
    each statement of a chunk runs read-only, under a statement timeout
    bound to the job's deadline (`CursorDaParte`). All of
    the report's SQL runs on `banco` (the replica, when `replica.escolher`
    says so); the checkpoints are written on the primary, by `acompanhamento`.
    """
    acompanhamento = acompanhamento or Acompanhamento()
    prazo = time.monotonic() + timeout_s
    leitura = connections[banco]
    with leitura.cursor() as cursor:
        partes = tipo.partes(cursor, ctx, params)
    parciais = acompanhamento.retomar(partes)
    armazem = reuso.iniciar(tipo, ctx, params, banco=banco)
    try:
        for feitas in range(len(parciais) + 1, len(partes) + 1):
            parte = partes[feitas - 1]

            def gerar(cursor: CursorWrapper, parte: Parte = parte) -> Parcial:
                return tipo.gerar_parte(
                    CursorDaParte(cursor, prazo), ctx, params, parte
                )

            # A chunk stored by an earlier job, still valid, is not computed;
            # either way it is recorded the same (progress, checkpoint).
            if armazem:
                parcial = armazem.parte(parte, gerar)
            else:
                # Inside an outer transaction (a test's), a savepoint ends the
                # chunk's read-only mode; the worker's connection is in
                # autocommit.
                externa = (
                    transaction.atomic(using=banco)
                    if leitura.in_atomic_block
                    else nullcontext()
                )
                with externa, leitura.cursor() as cursor:
                    parcial = gerar(cursor)
            parciais.append(parcial)
            acompanhamento.parte_pronta(feitas, partes, parcial)
    finally:
        if armazem:
            armazem.terminar()
    return tipo.combinar(params, parciais)


# Sent in front of each statement of a chunk, in the same message.
LIMITES = (
    "SELECT set_config('transaction_read_only', 'on', true),"
    " set_config('statement_timeout', '{ms}', true);\n"
)


def sem_limites(sql: str) -> str:
    """A chunk's statement as `CursorDaParte` sent it, without `LIMITES` in front
    (for whoever reads captured SQL: the bench)."""
    limites, separador, resto = sql.partition(";\n")
    if separador and limites.lstrip().startswith("SELECT set_config"):
        return resto
    return sql


class CursorDaParte(CursorWrapper):
    """The cursor a chunk's statements run on: each one read-only and ending by
    the job's deadline, in one round trip.

    Each `execute` sends one simple-protocol message, `LIMITES` then the
    statement with its parameters bound client-side. PostgreSQL runs a
    message of several statements as one implicit transaction: the first
    statement makes it read-only and sets its statement_timeout (both
    transaction-local, gone at its end), and the timeout applies to each
    later statement of the message on its own (PostgreSQL 13+). The cursor
    is then moved to the statement's result. Until issue 11 this was BEGIN,
    the limits, the statement and COMMIT: four round trips.

    Each statement is its own transaction: under READ COMMITTED (the
    project's isolation level) statements of one transaction take a snapshot
    each anyway, and nothing a read-only statement could leave behind
    (a temporary table) is allowed in either.
    """

    def __init__(self, base: CursorWrapper, prazo: float) -> None:
        cliente = base.cursor
        if not isinstance(cliente, psycopg.ClientCursor):
            # Server-side binding (DB_PREPARE_THRESHOLD): a statement with
            # parameters cannot share a message with another one; a
            # client-side cursor on the same connection can.
            cliente = psycopg.ClientCursor(base.db.connection)
            base = base.db.make_cursor(cliente)
        super().__init__(cliente, base.db)
        self._base = base
        self._prazo = prazo

    def execute(self, sql: Any, params: Any = None) -> Any:
        restante_ms = max(1, int((self._prazo - time.monotonic()) * 1000))
        # Without parameters the text goes as it is (a `%` stays one), as
        # Django and psycopg send it.
        texto = self.cursor.mogrify(sql, params)
        # Through the wrapper Django gave: its error translation and, in
        # DEBUG, its query log see the statement as sent.
        self._base.execute(LIMITES.format(ms=restante_ms) + texto)
        self.cursor.nextset()
        return self

    def executemany(self, sql: Any, param_list: Any) -> Any:
        raise NotImplementedError("a report chunk runs its statements with execute")


class _Checkpoint(Acompanhamento):
    def __init__(self, job: JobReivindicado, execucao: Execucao) -> None:
        self.job = job
        self.execucao = execucao

    def retomar(self, partes: list[Parte]) -> list[Parcial]:
        salvo = self.job.checkpoint or {}
        if salvo.get("partes") == partes:
            parciais = list(salvo.get("parciais") or [])
            if parciais:
                logger.info(
                    "job retomado do checkpoint",
                    extra={
                        "job_id": self.job.tentativa.job_id,
                        "partes": len(parciais),
                    },
                )
            return parciais
        if salvo:
            # The request now splits differently (e.g. a store was added).
            ciclo.descartar_checkpoint(tentativa=self.job.tentativa)
        return []

    def parte_pronta(self, feitas: int, partes: list[Parte], parcial: Parcial) -> None:
        if self.execucao.motivo is not None:
            raise Interrompido(self.execucao.motivo)
        if feitas == len(partes):
            return  # `concluir` writes next, with the result and 100%
        # 100 is reserved for `pronto`: a finished last chunk is not a result yet.
        if not ciclo.registrar_progresso(
            tentativa=self.job.tentativa,
            progresso=min(99, feitas * 100 // len(partes)),
            partes=partes,
            feitas=feitas,
            parcial=parcial,
        ):
            self.execucao.parar(PERDIDO)
            raise Interrompido(PERDIDO)


def _gerar(
    tipo: TipoRelatorio, job: JobReivindicado, execucao: Execucao
) -> dict[str, Any]:
    ctx = Contexto(
        job_id=job.tentativa.job_id,
        tenant_id=job.tenant_id,
        fuso_horario=job.fuso_horario,
    )
    escolha = replica.escolher()
    _registrar_escolha(job, escolha)
    if escolha.na_replica:
        execucao.leitura = connections[escolha.alias].connection
    try:
        return calcular(
            tipo,
            ctx,
            job.params,
            timeout_s=tipo.timeout(),
            acompanhamento=_Checkpoint(job, execucao),
            banco=escolha.alias,
        )
    finally:
        execucao.leitura = None


def _registrar_escolha(job: JobReivindicado, escolha: replica.Escolha) -> None:
    """One log line and one count per attempt when a replica is configured."""
    if not replica.configurada():
        return
    metricas.leitura_de_relatorio(
        onde="replica" if escolha.na_replica else "primario", motivo=escolha.motivo
    )
    extra = {
        "job_id": job.tentativa.job_id,
        "evento": "leitura",
        "motivo": escolha.motivo,
        "espera_ms": round(escolha.espera_s * 1000),
    }
    if escolha.na_replica:
        logger.info("relatório lido na réplica", extra=extra)
    elif escolha.motivo in (replica.NAO_E_REPLICA, replica.OUTRO_SERVIDOR):
        # Configuration, not weather: someone must look at it.
        logger.error(
            "réplica recusada: %s; relatório lido no primário",
            _POR_QUE_RECUSADA[escolha.motivo],
            extra=extra,
        )
    else:
        logger.warning(
            "relatório lido no primário: réplica %s", escolha.motivo, extra=extra
        )


_POR_QUE_RECUSADA = {
    replica.NAO_E_REPLICA: "não está em recuperação (promovida, ou é um primário)",
    replica.OUTRO_SERVIDOR: "o system identifier não é o do primário",
}


def _reconectar() -> None:
    # After a failure mid-statement the connection may be broken or busy;
    # writing the outcome on a fresh one is cheap and always safe.
    connection.close()
    replica.fechar()


# --- Signals in the worker processes ----------------------------------------------


def instalar_sinais(**kwargs: Any) -> None:
    """django-q2's post_spawn receiver: runs in each new worker process.

    SIGUSR2 (from our qcluster when it starts stopping): take no new job.
    SIGUSR1 (grace period over) and SIGTERM (the whole process group was
    told to stop): hand the running job back at once, then exit.
    """
    signal.signal(signal.SIGUSR2, _parar_de_reivindicar)
    signal.signal(signal.SIGUSR1, _devolver_agora)
    signal.signal(signal.SIGTERM, _devolver_agora)


def _parar_de_reivindicar(signum: int, frame: FrameType | None) -> None:
    global _desligando
    _desligando = True


def _devolver_agora(signum: int, frame: FrameType | None) -> None:
    global _desligando
    _desligando = True
    if _atual is None:
        raise SystemExit(0)
    _atual.parar(DESLIGAMENTO)
