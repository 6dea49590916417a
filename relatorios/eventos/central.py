"""A process's one reader of relatorio_eventos, fanned out to all of its streams.

Every stream of the process registers an `Assinatura` (a queue) here; one
task holds the only database connection that reads the events table and puts
each event in the queues of the streams that want it: the job's own streams
and its tenant's. A stream waits on its queue and holds no thread and no
database connection while it waits.

The reader reads `relatorio_eventos` after its position, in id order, every
RELATORIOS_EVENTOS_INTERVALO_S, and publishes what `ordem.Ordem` allows: ids
in order, waiting (boundedly) for a commit in flight that took a lower id.
The position, `posicao`, is the stream's frontier: every event up to it has
been handed out, every later one will be, so a stream that reads the table
up to it (its start, a resume, a catch-up) and then takes its queue sends
each event once, in order.

The connection can be lost (the server restarted, a failover,
`pg_terminate_backend`); the position stays, so the next connection reads
on from it and nothing is lost: a stream only waits longer while the
database is away. Reads every interval also prove the connection alive; TCP
keepalives catch a peer that vanished mid-read.

Heartbeats: every RELATORIOS_EVENTOS_BATIMENTO_S each stream gets one.

Credentials are checked again while a stream is open, not only when it
opens: every RELATORIOS_EVENTOS_REVISAO_S the reader runs one statement for
all of the process's open streams (`credenciais.validas`: the user active,
in the same tenant, its password unchanged, the token or the session still
there) and ends the ones that fail it (`revogar`: nothing more is sent, not
even what is already queued). A stream also ends after
RELATORIOS_EVENTOS_VIDA_MAX_S, whatever happens (EventSource reconnects,
authenticates again and resumes from its Last-Event-ID).

Caps: at most RELATORIOS_EVENTOS_MAX_POR_PROCESSO streams in the process,
RELATORIOS_EVENTOS_MAX_POR_TENANT of them per tenant (its share: one
tenant's many users cannot take the whole process) and
RELATORIOS_EVENTOS_MAX_POR_TOKEN per user (a token is one user); past any,
`Lotado` (the view answers 429).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections

from relatorios.eventos import credenciais, leitura
from relatorios.eventos.credenciais import Credencial
from relatorios.eventos.leitura import Aviso
from relatorios.eventos.ordem import Ordem

logger = logging.getLogger(__name__)

# What a queue carries besides events.
BATIMENTO = "batimento"
RESSINCRONIZAR = "ressincronizar"
ENCERRAR = "encerrar"

# A stream whose client reads slower than events arrive stops queueing at
# this many and catches up from the table instead.
FILA_MAXIMA = 1000

# How long an id given up on is checked for a late commit (`Ordem.tardios`).
GUARDA_DOS_PULADOS_S = 60.0


class Indisponivel(Exception):
    """The process has not read its position from the database yet."""


SEM_BANCO = "o servidor de eventos ainda não alcançou o banco"


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
        "aberta_em",
        "atrasada",
        "credencial",
        "encerrada",
        "espera",
        "itens",
        "job_id",
        "revogada",
        "tenant_id",
        "usuario_id",
    )

    def __init__(
        self,
        *,
        tenant_id: int,
        usuario_id: int,
        job_id: int | None,
        credencial: Credencial | None = None,
    ) -> None:
        self.tenant_id = tenant_id
        self.usuario_id = usuario_id
        # What authenticated it, checked again while it is open.
        self.credencial = credencial
        self.aberta_em = time.monotonic()
        # Its credential no longer holds: it sends nothing more.
        self.revogada = False
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
        """The stream is reading its catch-up: queue again."""
        self.atrasada = False

    def revogar(self) -> None:
        """Its credential no longer holds: drop what waits, end it now."""
        self.revogada = True
        self.itens.clear()
        self.por(ENCERRAR)


class Central:
    """The fan-out of one process. Created and started in its event loop."""

    def __init__(self) -> None:
        self.por_job: dict[int, set[Assinatura]] = defaultdict(set)
        self.por_tenant: dict[int, set[Assinatura]] = defaultdict(set)
        self.por_usuario: dict[int, int] = defaultdict(int)
        self.abertas_do_tenant: dict[int, int] = defaultdict(int)
        self.abertas = 0
        self.conexoes = 0
        # None until the first connection read where the events stand.
        self.ordem: Ordem | None = None
        self._pronta = asyncio.Event()
        self._tarefa: asyncio.Task[None] | None = None
        self._parando = False

    # --- streams ------------------------------------------------------------

    def assinar(
        self,
        *,
        tenant_id: int,
        usuario_id: int,
        job_id: int | None,
        credencial: Credencial | None = None,
    ) -> Assinatura:
        """Register a stream, within the caps (`Lotado` past them); its
        queue gets every event after `posicao()` (read it right away)."""
        if self.ordem is None:
            raise Indisponivel(SEM_BANCO)
        maximo = settings.RELATORIOS_EVENTOS_MAX_POR_PROCESSO
        if self.abertas >= maximo:
            raise Lotado(f"o servidor de eventos está no limite de {maximo} conexões")
        por_tenant = settings.RELATORIOS_EVENTOS_MAX_POR_TENANT
        if self.abertas_do_tenant.get(tenant_id, 0) >= por_tenant:
            raise Lotado(
                f"limite de {por_tenant} conexões de eventos abertas por empresa"
                " atingido"
            )
        por_token = settings.RELATORIOS_EVENTOS_MAX_POR_TOKEN
        if self.por_usuario[usuario_id] >= por_token:
            raise Lotado(
                f"limite de {por_token} conexões de eventos abertas por token atingido"
            )
        assinatura = Assinatura(
            tenant_id=tenant_id,
            usuario_id=usuario_id,
            job_id=job_id,
            credencial=credencial,
        )
        if job_id is None:
            self.por_tenant[tenant_id].add(assinatura)
        else:
            self.por_job[job_id].add(assinatura)
        self.por_usuario[usuario_id] += 1
        self.abertas_do_tenant[tenant_id] += 1
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
        self.abertas_do_tenant[assinatura.tenant_id] -= 1
        if self.abertas_do_tenant[assinatura.tenant_id] <= 0:
            del self.abertas_do_tenant[assinatura.tenant_id]
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

    # --- the position -------------------------------------------------------

    async def pronta(self, *, espera_s: float = 5.0) -> None:
        """Waits for a new process's first read of where the events stand
        (`Indisponivel` past `espera_s`: the database is away)."""
        if self.ordem is None:
            try:
                await asyncio.wait_for(self._pronta.wait(), espera_s)
            except TimeoutError:
                raise Indisponivel(
                    "o servidor de eventos não alcança o banco"
                ) from None

    def posicao(self) -> int:
        """Every event up to this id has been handed to the streams, every
        later one will be. Read with no `await` since the stream was
        registered (or resumed queueing), its queue gets exactly the events
        after it."""
        if self.ordem is None:
            raise Indisponivel(SEM_BANCO)
        return self.ordem.posicao

    # --- the reader -----------------------------------------------------------

    def iniciar(self) -> None:
        if self._tarefa is None:
            self._tarefa = asyncio.get_running_loop().create_task(
                self._ler(), name="relatorios-eventos-leitor"
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

    async def _ler(self) -> None:
        espera = 0.5
        while not self._parando:
            try:
                async with await psycopg.AsyncConnection.connect(
                    **parametros_de_conexao(), autocommit=True
                ) as conexao:
                    if self.ordem is None:
                        self.ordem = Ordem(
                            posicao=await _ponto_de_partida(conexao),
                            espera_s=settings.RELATORIOS_EVENTOS_ESPERA_LACUNA_S,
                        )
                        self._pronta.set()
                    self.conexoes += 1
                    espera = 0.5
                    if self.conexoes > 1:
                        logger.warning(
                            "leitura dos eventos restabelecida: segue da posição",
                            extra={"posicao": self.ordem.posicao},
                        )
                    await self._acompanhar(conexao, self.ordem)
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError) as erro:
                logger.warning(
                    "conexão de leitura dos eventos perdida; nova tentativa em %.1f s",
                    espera,
                    extra={"erro": str(erro)[:200]},
                )
                await asyncio.sleep(espera)
                espera = min(espera * 2, 10.0)

    async def revisar(self, conexao: psycopg.AsyncConnection[Any]) -> int:
        """End the streams past their maximum life, and those whose
        credential no longer holds (one statement for all); returns how
        many were revoked."""
        agora = time.monotonic()
        vida = settings.RELATORIOS_EVENTOS_VIDA_MAX_S
        abertas: list[Assinatura] = []
        for assinatura in self._todas():
            if agora - assinatura.aberta_em >= vida:
                assinatura.por(ENCERRAR)
            elif assinatura.credencial is not None and not assinatura.revogada:
                abertas.append(assinatura)
        if not abertas:
            return 0
        chaves = {(a.usuario_id, a.tenant_id, a.credencial) for a in abertas}
        prazo = settings.RELATORIOS_EVENTOS_ESPERA_BANCO_S
        try:
            validas = await asyncio.wait_for(
                credenciais.validas(conexao, chaves),  # type: ignore[arg-type]
                prazo,
            )
        except TimeoutError:
            raise BancoMudo(f"o banco não respondeu em {prazo:g} s") from None
        revogadas = 0
        for assinatura in abertas:
            chave = (assinatura.usuario_id, assinatura.tenant_id, assinatura.credencial)
            if chave not in validas:
                assinatura.revogar()
                revogadas += 1
        if revogadas:
            logger.warning(
                "fluxos de eventos encerrados: credencial revogada",
                extra={"fluxos": revogadas},
            )
        return revogadas

    async def _acompanhar(
        self, conexao: psycopg.AsyncConnection[Any], ordem: Ordem
    ) -> None:
        intervalo = settings.RELATORIOS_EVENTOS_INTERVALO_S
        batimento = settings.RELATORIOS_EVENTOS_BATIMENTO_S
        proximo_batimento = time.monotonic() + batimento
        revisao = settings.RELATORIOS_EVENTOS_REVISAO_S
        proxima_revisao = time.monotonic() + revisao
        while True:
            # A read every `intervalo` from the start of the last one, not
            # after it: what a read and its fan-out take is not added.
            ciclo = time.monotonic()
            while True:
                linhas = await _consultar(
                    conexao,
                    f"SELECT {leitura.COLUNAS} FROM relatorio_eventos"
                    " WHERE id > %s ORDER BY id LIMIT %s",
                    [ordem.posicao, leitura.LOTE],
                )
                for aviso in ordem.avancar(leitura.avisos(linhas), time.monotonic()):
                    self.despachar(aviso)
                # A full batch all published: more may be waiting already.
                if len(linhas) < leitura.LOTE or ordem.posicao < linhas[-1][0]:
                    break
            if ordem.pulados:
                visiveis = [
                    linha[0]
                    for linha in await _consultar(
                        conexao,
                        "SELECT id FROM relatorio_eventos WHERE id = ANY(%s)",
                        [list(ordem.pulados)],
                    )
                ]
                ordem.tardios(visiveis, time.monotonic(), GUARDA_DOS_PULADOS_S)
            agora = time.monotonic()
            if agora >= proxima_revisao:
                proxima_revisao = agora + revisao
                await self.revisar(conexao)
            if agora >= proximo_batimento:
                proximo_batimento = agora + batimento
                for assinatura in self._todas():
                    assinatura.entregar(BATIMENTO)
            await asyncio.sleep(max(0.0, ciclo + intervalo - time.monotonic()))


class BancoMudo(OSError):
    """The reader's database did not answer within RELATORIOS_EVENTOS_ESPERA_BANCO_S."""


async def _consultar(
    conexao: psycopg.AsyncConnection[Any], sql: str, parametros: Any
) -> list[Any]:
    """One read of the reader, within RELATORIOS_EVENTOS_ESPERA_BANCO_S: a
    server that stops answering (its host still acknowledging, so no
    keepalive notices) ends the connection, and the reader connects again
    instead of waiting on it for good."""
    prazo = settings.RELATORIOS_EVENTOS_ESPERA_BANCO_S

    async def ler() -> list[Any]:
        cursor = await conexao.execute(sql, parametros)
        return await cursor.fetchall()

    try:
        return await asyncio.wait_for(ler(), prazo)
    except TimeoutError:
        raise BancoMudo(f"o banco não respondeu em {prazo:g} s") from None


async def _ponto_de_partida(conexao: psycopg.AsyncConnection[Any]) -> int:
    """Where a new process starts reading: the newest event taken longer ago
    than the gap wait (any lower id still missing would be given up on by
    now anyway: it was taken before that one's criado_em), else just before
    the oldest kept event, else the sequence's last id (an empty table: no
    event in the retention, so none in flight but by a rare coincidence)."""
    linhas = await _consultar(
        conexao,
        """
        SELECT coalesce(
            (SELECT id FROM relatorio_eventos
              WHERE criado_em < clock_timestamp() - make_interval(secs => %s)
              ORDER BY id DESC LIMIT 1),
            (SELECT min(id) - 1 FROM relatorio_eventos),
            (SELECT CASE WHEN is_called THEN last_value ELSE 0 END
               FROM relatorio_eventos_id_seq))
        """,
        [settings.RELATORIOS_EVENTOS_ESPERA_LACUNA_S],
    )
    return int(linhas[0][0])


def parametros_de_conexao() -> dict[str, Any]:
    """The reader's connection's: the database of Django's `default`, with TCP
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
        # Unacknowledged data given up after 10 s (a host that vanished).
        "tcp_user_timeout": 10_000,
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
