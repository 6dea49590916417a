"""A process's one LISTEN connection, fanned out to all of its streams.

Every stream of the process registers an `Assinatura` (a queue) here; one
task holds the only connection that LISTENs on `relatorios_eventos` and puts
each event in the queues of the streams that want it: the job's own streams
and its tenant's. A stream waits on its queue and holds no thread and no
database connection while it waits.

The connection can be lost (the server restarted, a failover,
`pg_terminate_backend`). Events committed meanwhile reach no listener, so
after every (re)connection, once LISTEN is in place again, each stream is
told to catch up from the table (`RESSINCRONIZAR`): it reads the events
after the last one it sent, and the ids drop whatever then also arrives by
NOTIFY. Nothing is lost and nothing is sent twice; a stream only waits
longer while the database is away.

The liveness of the connection is proved every RELATORIOS_EVENTOS_BATIMENTO_S
with a `SELECT 1`, so a connection that died silently is replaced within
that time; the same tick sends each stream its heartbeat.

Caps: at most RELATORIOS_EVENTOS_MAX_POR_PROCESSO streams in the process
and RELATORIOS_EVENTOS_MAX_POR_TOKEN per user (a token is one user); past
either, `Lotado` (the view answers 429).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import defaultdict
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections

from relatorios.eventos.leitura import Aviso

logger = logging.getLogger(__name__)

CANAL = "relatorios_eventos"

# What a queue carries besides events.
BATIMENTO = "batimento"
RESSINCRONIZAR = "ressincronizar"
ENCERRAR = "encerrar"

# A stream whose client reads slower than events arrive stops queueing at
# this many and catches up from the table instead (like after a reconnect).
FILA_MAXIMA = 1000


class Lotado(Exception):
    """The process or the user has as many open streams as allowed."""

    def __init__(self, mensagem: str) -> None:
        super().__init__(mensagem)
        self.mensagem = mensagem


class Assinatura:
    """One open stream: what it wants, and its events waiting to be sent.

    A list and one future, not an asyncio.Queue: a Queue is ~3.3 KB with its
    own deques and event (a deque alone ~0.8 KB), an empty list 56 bytes, and
    a process holds thousands (B9). The list is short: a stream sends what
    it gets as it gets it, and past FILA_MAXIMA it is emptied.
    """

    __slots__ = (
        "__weakref__",
        "atrasada",
        "encerrada",
        "espera",
        "itens",
        "job_id",
        "tenant_id",
        "usuario_id",
    )

    def __init__(self, *, tenant_id: int, usuario_id: int, job_id: int | None) -> None:
        self.tenant_id = tenant_id
        self.usuario_id = usuario_id
        # None: every event of the tenant; else the job's only.
        self.job_id = job_id
        self.itens: list[Any] = []
        self.espera: asyncio.Future[None] | None = None
        self.atrasada = False
        self.encerrada = False

    def por(self, item: Any) -> None:
        """Queue an item, whatever the queue's length (markers)."""
        self.itens.append(item)
        espera = self.espera
        if espera is not None and not espera.done():
            espera.set_result(None)

    def entregar(self, item: Any) -> None:
        """Queue an event or a heartbeat, unless the stream is too far behind."""
        if self.atrasada:
            return
        if len(self.itens) >= FILA_MAXIMA:
            # Too far behind: drop the queue's events, read them from the
            # table when the client catches up.
            self.atrasada = True
            self.itens.clear()
            self.por(RESSINCRONIZAR)
            return
        self.por(item)

    async def proximo(self) -> Any:
        """The next item, waiting for one without a thread."""
        while not self.itens:
            self.espera = asyncio.get_running_loop().create_future()
            await self.espera
        self.espera = None
        return self.itens.pop(0)

    def retomada(self) -> None:
        """The stream read its catch-up: queue again."""
        self.atrasada = False


class Central:
    """The fan-out of one process. Created and started in its event loop."""

    def __init__(self) -> None:
        self.por_job: dict[int, set[Assinatura]] = defaultdict(set)
        self.por_tenant: dict[int, set[Assinatura]] = defaultdict(set)
        self.por_usuario: dict[int, int] = defaultdict(int)
        self.abertas = 0
        self.conectada = asyncio.Event()
        self.conexoes = 0
        self._tarefa: asyncio.Task[None] | None = None
        self._parando = False

    # --- streams ------------------------------------------------------------

    def assinar(
        self, *, tenant_id: int, usuario_id: int, job_id: int | None
    ) -> Assinatura:
        """Register a stream, within the caps (`Lotado` past them)."""
        maximo = settings.RELATORIOS_EVENTOS_MAX_POR_PROCESSO
        if self.abertas >= maximo:
            raise Lotado(f"o servidor de eventos está no limite de {maximo} conexões")
        por_token = settings.RELATORIOS_EVENTOS_MAX_POR_TOKEN
        if self.por_usuario[usuario_id] >= por_token:
            raise Lotado(
                f"limite de {por_token} conexões de eventos abertas por token atingido"
            )
        assinatura = Assinatura(
            tenant_id=tenant_id, usuario_id=usuario_id, job_id=job_id
        )
        if job_id is None:
            self.por_tenant[tenant_id].add(assinatura)
        else:
            self.por_job[job_id].add(assinatura)
        self.por_usuario[usuario_id] += 1
        self.abertas += 1
        return assinatura

    def cancelar(self, assinatura: Assinatura) -> None:
        """Forget a stream (idempotent: its end and its collection both call it)."""
        if assinatura.encerrada:
            return
        assinatura.encerrada = True
        indice, chave = (
            (self.por_tenant, assinatura.tenant_id)
            if assinatura.job_id is None
            else (self.por_job, assinatura.job_id)
        )
        grupo = indice.get(chave)
        if grupo is not None:
            grupo.discard(assinatura)
            if not grupo:
                del indice[chave]
        self.por_usuario[assinatura.usuario_id] -= 1
        if self.por_usuario[assinatura.usuario_id] <= 0:
            del self.por_usuario[assinatura.usuario_id]
        self.abertas -= 1

    def _todas(self) -> list[Assinatura]:
        return [
            a for g in (*self.por_job.values(), *self.por_tenant.values()) for a in g
        ]

    def despachar(self, aviso: Aviso) -> None:
        """Hand one event to the streams that want it (its job's, its tenant's)."""
        if aviso.job_id is not None:
            for assinatura in self.por_job.get(aviso.job_id, ()):
                assinatura.entregar(aviso)
        for assinatura in self.por_tenant.get(aviso.tenant_id, ()):
            assinatura.entregar(aviso)

    # --- the connection -------------------------------------------------------

    def iniciar(self) -> None:
        if self._tarefa is None:
            self._tarefa = asyncio.get_running_loop().create_task(
                self._ouvir(), name="relatorios-eventos-listen"
            )

    async def parar(self) -> None:
        """Shutdown: every stream ends with its `retry:` (clients reconnect
        to another process), then the connection closes."""
        self._parando = True
        for assinatura in self._todas():
            assinatura.por(ENCERRAR)
        if self._tarefa is not None:
            self._tarefa.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tarefa

    async def _ouvir(self) -> None:
        espera = 0.5
        while not self._parando:
            try:
                async with await psycopg.AsyncConnection.connect(
                    **parametros_de_conexao(), autocommit=True
                ) as conexao:
                    await conexao.execute(f"LISTEN {CANAL}")
                    self.conexoes += 1
                    self.conectada.set()
                    espera = 0.5
                    if self.conexoes > 1:
                        logger.warning(
                            "LISTEN restabelecido: streams retomam da tabela",
                            extra={"streams": self.abertas},
                        )
                    # Also after the first connection: a stream that
                    # started while there was none read the table then.
                    for assinatura in self._todas():
                        assinatura.por(RESSINCRONIZAR)
                    await self._receber(conexao)
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError) as erro:
                self.conectada.clear()
                logger.warning(
                    "conexão de LISTEN perdida; nova tentativa em %.1f s",
                    espera,
                    extra={"erro": str(erro)[:200]},
                )
                await asyncio.sleep(espera)
                espera = min(espera * 2, 10.0)

    async def _receber(self, conexao: psycopg.AsyncConnection[Any]) -> None:
        intervalo = settings.RELATORIOS_EVENTOS_BATIMENTO_S
        while True:
            async for notificacao in conexao.notifies(timeout=intervalo):
                try:
                    aviso = Aviso.da_notificacao(json.loads(notificacao.payload))
                except (ValueError, KeyError, TypeError):
                    logger.exception("aviso ilegível", extra={"aviso": notificacao})
                    continue
                self.despachar(aviso)
            # A quiet interval: prove the connection, and beat every stream.
            await conexao.execute("SELECT 1")
            for assinatura in self._todas():
                assinatura.entregar(BATIMENTO)


def parametros_de_conexao() -> dict[str, Any]:
    """The LISTEN connection's: the database of Django's `default`, with TCP
    keepalives so a peer that vanished is noticed by the kernel too."""
    banco = connections["default"].settings_dict
    parametros: dict[str, Any] = {
        "dbname": banco["NAME"],
        "user": banco.get("USER") or None,
        "password": banco.get("PASSWORD") or None,
        "host": banco.get("HOST") or None,
        "port": banco.get("PORT") or None,
        "application_name": "relatorios-eventos",
        "connect_timeout": 5,
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
    }
    return {chave: valor for chave, valor in parametros.items() if valor is not None}


_central: Central | None = None


def central() -> Central:
    """This process's fan-out, started on first use in the running loop."""
    global _central
    if _central is None:
        _central = Central()
    _central.iniciar()
    return _central
