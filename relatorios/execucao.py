"""Running one job inside a django-q2 worker: claim, heartbeat, chunks, outcome.

State changes go through `services`; this module only decides which one.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from django import db
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django_q.exceptions import TimeoutException

from relatorios import services, tipos
from relatorios.services import JobReivindicado
from relatorios.tipos.base import Contexto, TipoRelatorio

logger = logging.getLogger(__name__)


class JobPerdido(Exception):
    """The attempt lost its job (the fence said no): stop without writing."""


class Batimento(threading.Thread):
    """Refreshes heartbeat_em on its own connection while the report runs.

    Independent of the report's progress, so a long SQL statement does not look
    like a dead worker. When the guarded update touches no row the job is no
    longer this attempt's: `perdido` is set and the report stops at the next
    chunk boundary.
    """

    def __init__(self, *, job_id: int, tentativa: int, intervalo_s: float) -> None:
        super().__init__(name=f"batimento-{job_id}", daemon=True)
        self.job_id = job_id
        self.tentativa = tentativa
        self.intervalo_s = intervalo_s
        self.perdido = threading.Event()
        self._parar = threading.Event()

    def run(self) -> None:
        try:
            while not self._parar.wait(self.intervalo_s):
                try:
                    vivo = services.batimento(
                        job_id=self.job_id, tentativa=self.tentativa
                    )
                except DatabaseError:
                    # A lost connection is retried on the next beat; if the
                    # database stays away, the orphan sweep decides.
                    logger.warning("batimento falhou", extra={"job_id": self.job_id})
                    db.close_old_connections()
                    continue
                if not vivo:
                    self.perdido.set()
                    return
        finally:
            # Connections are per thread: this closes only the heartbeat's own.
            db.connections.close_all()

    def parar(self) -> None:
        self._parar.set()
        self.join(timeout=5)


def executar(*, job_id: int) -> None:
    """Claim the job and run it to `pronto` or `falhou`; a lost claim does nothing."""
    job = services.reivindicar(job_id=job_id)
    if job is None:
        logger.info("job não reivindicado: não está pendente", extra={"job_id": job_id})
        return
    inicio = time.monotonic()
    campos = {"job_id": job.id, "tenant_id": job.tenant_id, "tipo": job.tipo}
    logger.info("job iniciado", extra={**campos, "tentativa": job.tentativa})
    batimento = Batimento(
        job_id=job.id,
        tentativa=job.tentativa,
        intervalo_s=settings.RELATORIOS_HEARTBEAT_S,
    )
    batimento.start()
    try:
        tipo = tipos.obter(job.tipo)
        resultado = _gerar(tipo, job, batimento)
        ganhou = services.concluir(
            job_id=job.id,
            tentativa=job.tentativa,
            resultado=resultado,
            validade_s=tipo.validade(),
        )
        desfecho = "pronto" if ganhou else "perdido"
    except JobPerdido:
        desfecho = "perdido"
    except TimeoutException:
        # django-q2's hard stop (a SystemExit): record it, then let the worker die.
        _falhar(job, "o relatório excedeu o tempo limite e foi interrompido")
        raise
    except Exception as exc:
        desfecho = "falhou"
        _falhar(job, mensagem_para_tenant(exc))
    finally:
        batimento.parar()
    duracao = round(time.monotonic() - inicio, 3)
    nivel = logging.ERROR if desfecho == "falhou" else logging.INFO
    logger.log(
        nivel,
        "job terminado",
        extra={**campos, "desfecho": desfecho, "duracao_s": duracao},
    )


def mensagem_para_tenant(exc: BaseException) -> str:
    """What a client may be shown: what failed, never a traceback."""
    if isinstance(exc, db.utils.OperationalError) and "statement timeout" in str(exc):
        return "o relatório excedeu o tempo limite de consulta"
    primeira_linha = (str(exc).strip().splitlines() or [""])[0][:200]
    nome = type(exc).__name__
    return f"{nome}: {primeira_linha}" if primeira_linha else nome


def calcular(
    tipo: TipoRelatorio,
    ctx: Contexto,
    params: dict[str, Any],
    *,
    timeout_s: float,
    apos_parte: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run a report chunk by chunk; `apos_parte(feitas, total)` after each."""
    prazo = time.monotonic() + timeout_s
    with transaction.atomic(), connection.cursor() as cursor:
        _limitar(cursor, prazo)
        partes = tipo.partes(cursor, ctx, params)
    parciais = []
    for feitas, parte in enumerate(partes, start=1):
        with transaction.atomic(), connection.cursor() as cursor:
            _limitar(cursor, prazo)
            parciais.append(tipo.gerar_parte(cursor, ctx, params, parte))
        if apos_parte is not None:
            apos_parte(feitas, len(partes))
    return tipo.combinar(params, parciais)


def _gerar(
    tipo: TipoRelatorio, job: JobReivindicado, batimento: Batimento
) -> dict[str, Any]:
    def apos_parte(feitas: int, total: int) -> None:
        # 100 is reserved for `pronto`: a finished last chunk is not a result yet.
        progresso = min(99, feitas * 100 // total)
        if batimento.perdido.is_set() or not services.registrar_progresso(
            job_id=job.id, tentativa=job.tentativa, progresso=progresso
        ):
            raise JobPerdido

    ctx = Contexto(
        job_id=job.id, tenant_id=job.tenant_id, fuso_horario=job.fuso_horario
    )
    return calcular(
        tipo, ctx, job.params, timeout_s=tipo.timeout(), apos_parte=apos_parte
    )


def _limitar(cursor: CursorWrapper, prazo: float) -> None:
    """Read-only transaction whose statements end by the job's deadline."""
    restante_ms = max(1, int((prazo - time.monotonic()) * 1000))
    cursor.execute("SET TRANSACTION READ ONLY")
    cursor.execute(
        "SELECT set_config('statement_timeout', %s, true)", [str(restante_ms)]
    )


def _falhar(job: JobReivindicado, erro: str) -> None:
    # The report may have died with the connection; write on a healthy one.
    db.close_old_connections()
    services.falhar(
        job_id=job.id,
        tentativa=job.tentativa,
        erro=erro,
        detalhe=traceback.format_exc(),
    )
