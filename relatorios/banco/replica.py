"""Where a report's SQL reads: the streaming replica when it is fresh enough,
else the primary.

RELATORIOS_REPLICA_URL names a PostgreSQL hot standby of the primary
(DATABASES["replica"]). Unset, there is no choice to make: everything reads
and writes the one database.

The freshness rule (docs/implantacao.md, "A read replica"): an attempt reads on
the replica only once the replica has replayed the primary's WAL up to where
it was when the attempt started (`pg_current_wal_lsn()` on the primary, then
`pg_last_wal_replay_lsn()` on the replica). So the report sees every row the
primary had committed when it started, as it would reading on the primary.
The replica is given RELATORIOS_REPLICA_ESPERA_S to catch up; after that the
attempt reads on the primary. Replay only moves forward, so every later chunk
of the attempt reads data at least that fresh.

Before it is trusted the replica must prove it is one, and this primary's:
in recovery (a promoted standby, or a URL pointing at a primary, writes on
its own and drifts away), with the primary's system identifier (a standby
of another cluster, or a restored copy, has another). A replica that fails
either test is refused, and the report reads on the primary: a replica
never makes a report fail.

One deadline bounds the whole probe, connecting included: a replica that
accepts connections and then answers nothing costs an attempt at most
RELATORIOS_REPLICA_ESPERA_S (see `_Prazo` for how, and why nothing else
would). /metrics never probes: a cluster looks every
RELATORIOS_CLUSTER_BATIMENTO_S (`estado`, under the same deadline) and the
scrape reports what it saw last, with its age (fila/clusters.py).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, connections

from relatorios.banco.base import DatabaseWrapper

ALIAS = "replica"
PRIMARIO = "default"

# Why the report reads where it does (the `motivo` of the log line and of
# relatorios_leituras_de_relatorio_total).
EM_DIA = "em_dia"
ATRASADA = "atrasada"
INDISPONIVEL = "indisponivel"
NAO_E_REPLICA = "nao_e_replica"
OUTRO_SERVIDOR = "outro_servidor"

# How often a lagging replica is asked again while the attempt waits.
_INTERVALO_S = 0.05
# psycopg never waits less for a connection (libpq's floor for connect_timeout).
_CONEXAO_MINIMA_S = 2

_SQL_PRIMARIO = (
    "SELECT pg_current_wal_lsn()::text,"
    " (SELECT system_identifier FROM pg_control_system())"
)
_SQL_REPLICA = (
    "SELECT pg_is_in_recovery(),"
    " (SELECT system_identifier FROM pg_control_system()),"
    " pg_last_wal_replay_lsn()::text,"
    " extract(epoch FROM now() - pg_last_xact_replay_timestamp())"
)


@dataclass(frozen=True)
class Escolha:
    """Where this attempt's report SQL runs, and why."""

    alias: str
    motivo: str
    espera_s: float = 0.0

    @property
    def na_replica(self) -> bool:
        return self.alias == ALIAS


def configurada() -> bool:
    return ALIAS in settings.DATABASES


def lsn(texto: str | None) -> int | None:
    """A pg_lsn's text ('16/B374D848') as a byte position."""
    if not texto:
        return None
    alto, _, baixo = texto.partition("/")
    return (int(alto, 16) << 32) + int(baixo, 16)


def _primario() -> tuple[int, int]:
    with connections[PRIMARIO].cursor() as cursor:
        cursor.execute(_SQL_PRIMARIO)
        posicao, identificador = cursor.fetchone()
    return lsn(posicao) or 0, int(identificador)


@dataclass(frozen=True)
class _Leitura:
    """One look at the replica, judged against the primary's identifier."""

    recusa: str | None  # NAO_E_REPLICA or OUTRO_SERVIDOR: never read there
    reproduzido: int  # how far it has replayed
    idade_s: float  # age of the last transaction it replayed


def _ler_replica(identificador: int) -> _Leitura:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute(_SQL_REPLICA)
        em_recuperacao, dela, reproduzido, idade = cursor.fetchone()
    if not em_recuperacao:
        recusa: str | None = NAO_E_REPLICA
    elif int(dela) != identificador:
        recusa = OUTRO_SERVIDOR
    else:
        recusa = None
    return _Leitura(recusa, lsn(reproduzido) or 0, max(0.0, float(idade or 0)))


class _Prazo:
    """The probe's deadline, which nothing it does on the replica outlives.

    What else could bound a read from a replica that accepted the connection
    and went silent: not statement_timeout (the server enforces it, and the
    server is the one not answering); not keepalives nor tcp_user_timeout
    while the replica's host still acknowledges the packets (a stopped or
    wedged server process, a proxy in front of it); not psycopg, whose
    connect_timeout covers connecting only and which has no public read
    timeout. So, at the deadline, the sockets of the replica connections the
    probe uses are shut down (`shutdown(2)` on a duplicate of the descriptor
    psycopg's public `fileno()` gives): the read blocked on one returns at
    once, with a connection error. A connection opened during the probe gives
    up connecting by the deadline (`timeout_de_conexao`, rounded down to
    whole seconds and at least psycopg's 2 s) and is watched from the moment
    it exists (`vigiar`, through `banco.base`).

    The duplicates, not the descriptors themselves: psycopg may close its
    descriptor (and the number be reused) while the timer fires; a duplicate
    keeps naming the same socket until `__exit__` closes it.
    """

    def __init__(self, ate: float) -> None:
        self.ate = ate
        self.cortou = False
        self._trava = threading.Lock()
        self._soquetes: list[socket.socket] = []
        self._relogio = threading.Timer(max(0.0, ate - time.monotonic()), self._cortar)
        self._relogio.daemon = True
        banco = connections[ALIAS]
        self._banco = banco if isinstance(banco, DatabaseWrapper) else None

    def restante_s(self) -> float:
        return self.ate - time.monotonic()

    def timeout_de_conexao(self, configurado: object) -> int:
        teto = int(self.restante_s())
        # The alias's own (a URL's ?connect_timeout=) when shorter; 0 is none.
        proprio = 0 if configurado is None else int(float(str(configurado)))
        if proprio > 0:
            teto = min(teto, proprio)
        return max(_CONEXAO_MINIMA_S, teto)

    def vigiar(self, conexao: psycopg.Connection[Any]) -> None:
        with self._trava:
            try:
                soquete = socket.socket(fileno=os.dup(conexao.fileno()))
            except (psycopg.Error, OSError):
                return  # closed already: nothing left to wait on
            self._soquetes.append(soquete)
            if self.cortou:
                _desligar(soquete)

    def __enter__(self) -> _Prazo:
        if self._banco is not None:
            self._banco.prazo = self
            if self._banco.connection is not None:
                self.vigiar(self._banco.connection)
        self._relogio.start()
        return self

    def __exit__(
        self,
        tipo: type[BaseException] | None,
        erro: BaseException | None,
        rastro: TracebackType | None,
    ) -> None:
        self._relogio.cancel()
        with self._trava:
            if self._banco is not None:
                self._banco.prazo = None
            for soquete in self._soquetes:
                soquete.close()
            self._soquetes.clear()
        if self.cortou:
            fechar()  # whatever answered last, the connection was cut under it

    def _cortar(self) -> None:
        with self._trava:
            self.cortou = True
            for soquete in self._soquetes:
                _desligar(soquete)


def _desligar(soquete: socket.socket) -> None:
    with contextlib.suppress(OSError):
        soquete.shutdown(socket.SHUT_RDWR)


def escolher() -> Escolha:
    """Where the report of the attempt starting now reads (see the module's doc)."""
    if not configurada():
        return Escolha(PRIMARIO, "sem_replica")
    alvo, identificador = _primario()
    inicio = time.monotonic()
    with _Prazo(inicio + settings.RELATORIOS_REPLICA_ESPERA_S) as prazo:
        escolha = _esperar(alvo, identificador, prazo)
    if prazo.cortou and escolha.na_replica:
        # Caught up just as the deadline cut the connection: read on the primary.
        return Escolha(PRIMARIO, INDISPONIVEL, time.monotonic() - inicio)
    return escolha


def _esperar(alvo: int, identificador: int, prazo: _Prazo) -> Escolha:
    inicio = time.monotonic()
    novas = 1  # a kept connection the replica dropped (a restart) gets one new try
    while True:
        try:
            leitura = _ler_replica(identificador)
        except DatabaseError:
            fechar()
            # ... if a new connection can still be tried before the deadline.
            if novas and prazo.restante_s() >= _CONEXAO_MINIMA_S:
                novas -= 1
                continue
            return Escolha(PRIMARIO, INDISPONIVEL, time.monotonic() - inicio)
        if leitura.recusa:
            return Escolha(PRIMARIO, leitura.recusa)
        espera = time.monotonic() - inicio
        if leitura.reproduzido >= alvo:
            return Escolha(ALIAS, EM_DIA, espera)
        # Asked again only if the answer can come well before the deadline
        # cuts the connection: a lagging replica is not an unavailable one.
        if prazo.restante_s() < 2 * _INTERVALO_S:
            return Escolha(PRIMARIO, ATRASADA, espera)
        time.sleep(_INTERVALO_S)


def fechar() -> None:
    """Drop this thread's replica connection (after a failure on it)."""
    if configurada():
        connections[ALIAS].close()


@dataclass(frozen=True)
class Estado:
    """What /metrics says of the replica."""

    motivo: str  # EM_DIA when usable, else why not (ATRASADA counts as usable)
    atraso_bytes: float  # 0 when not usable: the gauges leave the lag out then
    atraso_s: float

    @property
    def disponivel(self) -> bool:
        return self.motivo in (EM_DIA, ATRASADA)


def estado() -> Estado | None:
    """The replica's health and lag, as a cluster records them for the gauges
    (one look, under the probe's deadline); None when not configured.

    The lag in seconds is how old the last replayed transaction is, 0 when
    nothing is left to replay (an idle primary writes nothing, and the age of
    its last transaction is no lag).
    """
    if not configurada():
        return None
    alvo, identificador = _primario()
    leitura: _Leitura | None = None
    with _Prazo(time.monotonic() + settings.RELATORIOS_REPLICA_ESPERA_S) as prazo:
        try:
            leitura = _ler_replica(identificador)
        except DatabaseError:
            fechar()
    if leitura is None or prazo.cortou:
        return Estado(INDISPONIVEL, 0.0, 0.0)
    if leitura.recusa:
        return Estado(leitura.recusa, 0.0, 0.0)
    atraso = max(0, alvo - leitura.reproduzido)
    segundos = 0.0 if atraso == 0 else leitura.idade_s
    return Estado(EM_DIA if atraso == 0 else ATRASADA, float(atraso), segundos)


class Roteador:
    """DATABASE_ROUTERS entry: nothing is ever migrated on the replica (it is
    read-only, and follows the primary's schema through replication).

    Reads and writes still go to the primary unless code names the alias:
    only a report's SQL does (relatorios/jobs/execucao.py).
    """

    def allow_migrate(self, db: str, app_label: str, **hints: object) -> bool | None:
        return False if db == ALIAS else None
