"""Where a report's SQL reads: the streaming replica when it is fresh enough,
else the primary.

RELATORIOS_REPLICA_URL names a PostgreSQL hot standby of the primary
(DATABASES["replica"]). Unset, there is no choice to make: everything reads
and writes the one database.

The freshness rule (docs/operacao.md, "A read replica"): an attempt reads on
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
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connections

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


def escolher() -> Escolha:
    """Where the report of the attempt starting now reads (see the module's doc)."""
    if not configurada():
        return Escolha(PRIMARIO, "sem_replica")
    alvo, identificador = _primario()
    inicio = time.monotonic()
    prazo = inicio + settings.RELATORIOS_REPLICA_ESPERA_S
    novas = 1  # a kept connection the replica dropped (a restart) gets one new try
    while True:
        try:
            leitura = _ler_replica(identificador)
        except DatabaseError:
            fechar()
            if novas:
                novas -= 1
                continue
            return Escolha(PRIMARIO, INDISPONIVEL, time.monotonic() - inicio)
        if leitura.recusa:
            return Escolha(PRIMARIO, leitura.recusa)
        espera = time.monotonic() - inicio
        if leitura.reproduzido >= alvo:
            return Escolha(ALIAS, EM_DIA, espera)
        if time.monotonic() >= prazo:
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
    """The replica's health and lag, for the gauges; None when not configured.

    The lag in seconds is how old the last replayed transaction is, 0 when
    nothing is left to replay (an idle primary writes nothing, and the age of
    its last transaction is no lag).
    """
    if not configurada():
        return None
    alvo, identificador = _primario()
    try:
        leitura = _ler_replica(identificador)
    except DatabaseError:
        fechar()
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
