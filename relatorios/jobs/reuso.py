"""Report chunks computed once, reused by every later job that covers them.

A chunk's partial result (`Parcial`) is determined by the tenant, the type
and its code, the tenant's time zone, the normalized parameters but the
range, the chunk's own bounds, and the ERP rows its SQL reads. The first five
make the key (`chave`); the rows are stood for by their data versions
(relatorio_versoes_erp: per tenant, ERP table and UTC month, or per tenant
for a table without dates), which triggers bump in the same transaction as
every write (relatorios/banco/sql/relatorios_erp_versionar.sql).

Why a reuse is exact:

1. A chunk is computed in one REPEATABLE READ read-only transaction, on the
   connection its SQL reads (the replica's included), whose first statement
   reads the versions it depends on (relatorios_versoes_erp). Versions and
   data are of one snapshot: a write committed after that snapshot is not in
   the data, and bumps a version past the one recorded.
2. A stored chunk is reused only when every version it recorded equals the
   current one (an absent version is 0; versions only grow and are never
   deleted). Equal versions mean no write touched any row the chunk could
   have read since its snapshot, so its SQL would return the same now.
3. Storing is one INSERT ... ON CONFLICT statement: a worker killed while
   storing leaves the old row or the new one, never half of one. Two jobs
   storing the same chunk each store a row labelled with its own versions.

The store is a cache: when it is full (RELATORIOS_REUSO_ORCAMENTO_BYTES per
tenant, least recently used evicted), failing, locked or absent, the chunk is
computed, with a log line and a count (`metricas.partes`), never an error.
RELATORIOS_REUSO_PARTES off computes every chunk, as before.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.backends.utils import CursorWrapper

from relatorios.models.partes import PERIODO_DA_LINHA
from relatorios.operacao import metricas
from relatorios.tipos import sql as sql_dos_tipos
from relatorios.tipos.base import Contexto, Parcial, Parte, TipoRelatorio

logger = logging.getLogger(__name__)

ACERTO, FALHA, GUARDADA, DESPEJADA, RECUSADA, ERRO = (
    "acerto",
    "falha",
    "guardada",
    "despejada",
    "recusada",
    "erro",
)
# The store's statements wait this long for a lock or a result, then the
# chunk is computed instead: a locked table must not stall a report.
LIMITES_DO_ARMAZEM = (
    "SELECT set_config('lock_timeout', '1000', true),"
    " set_config('statement_timeout', '5000', true)"
)

# In the chunk's snapshot: the versions it depends on and, if one is stored
# with exactly those, the stored chunk.
_CONSULTAR = """
    SELECT v.versoes::text, p.id, p.parcial
      FROM (SELECT relatorios_versoes_erp(%s, %s, %s, %s, %s) AS versoes) AS v
      LEFT JOIN relatorio_partes p
        ON p.tenant_id = %s AND p.chave = %s AND p.versoes = v.versoes
"""

# The chunks this run reused, marked used (for eviction) once, at its end.
_USADAS = """
    UPDATE relatorio_partes SET usado_em = now(), usos = usos + 1
     WHERE id = ANY(%(usadas)s)
"""

_GUARDAR = """
    INSERT INTO relatorio_partes
           (tenant_id, tipo, chave, parte, parcial, versoes, tamanho, usos,
            criado_em, usado_em)
    VALUES (%(tenant)s, %(tipo)s, %(chave)s, %(parte)s::jsonb, %(parcial)s,
            %(versoes)s::jsonb, %(tamanho)s, 0, now(), now())
    ON CONFLICT (tenant_id, chave) DO UPDATE
       SET parcial = EXCLUDED.parcial, versoes = EXCLUDED.versoes,
           tamanho = EXCLUDED.tamanho, parte = EXCLUDED.parte,
           criado_em = now(), usado_em = now()
"""

# The tenant's chunks beyond its budget, least recently used first
# (relatorio_partes_uso).
_DESPEJAR = """
    DELETE FROM relatorio_partes p
     USING (SELECT id, sum(tamanho) OVER (ORDER BY usado_em DESC, id DESC) AS soma
              FROM relatorio_partes
             WHERE tenant_id = %(tenant)s) AS o
     WHERE p.id = o.id AND o.soma > %(orcamento)s
"""

_CONTAR = """
    INSERT INTO relatorio_reuso_tenants
           (tenant_id, acertos, falhas, guardadas, despejadas, atualizado_em)
    VALUES (%(tenant)s, %(acerto)s, %(falha)s, %(guardada)s, %(despejada)s, now())
    ON CONFLICT (tenant_id) DO UPDATE
       SET acertos = relatorio_reuso_tenants.acertos + EXCLUDED.acertos,
           falhas = relatorio_reuso_tenants.falhas + EXCLUDED.falhas,
           guardadas = relatorio_reuso_tenants.guardadas + EXCLUDED.guardadas,
           despejadas = relatorio_reuso_tenants.despejadas + EXCLUDED.despejadas,
           atualizado_em = now()
"""

_FAIXA = ("inicio", "fim")


def ligado() -> bool:
    return bool(settings.RELATORIOS_REUSO_PARTES)


@cache
def versao_do_codigo(cls: type[TipoRelatorio]) -> str:
    """A digest of the source of the type's class and its bases' modules and
    of the shared SQL fragments: a deployed code change is a new key, so a
    chunk computed by older code is never reused."""
    modulos = {sys.modules[c.__module__] for c in cls.__mro__ if c is not object}
    modulos.add(sql_dos_tipos)
    resumo = hashlib.sha256()
    for modulo in sorted(modulos, key=lambda m: m.__name__):
        try:
            resumo.update(inspect.getsource(modulo).encode())
        except (OSError, TypeError):
            # No source (a frozen module): its name and the type's identity.
            resumo.update(f"{modulo.__name__}:{id(cls)}".encode())
    return resumo.hexdigest()


class Reuso:
    """The chunk store as one report run (`calcular`) sees it."""

    def __init__(
        self, tipo: TipoRelatorio, ctx: Contexto, params: Mapping[str, Any], banco: str
    ) -> None:
        self.tipo = tipo
        self.ctx = ctx
        self.banco = banco
        tabelas = [m._meta.db_table for m in tipo.tabelas_erp]
        self.datadas = [t for t in tabelas if t in PERIODO_DA_LINHA]
        self.sem_data = [t for t in tabelas if t not in PERIODO_DA_LINHA]
        self.forma = json.dumps(
            {
                "tipo": tipo.tipo,
                "codigo": versao_do_codigo(type(tipo)),
                "fuso": ctx.fuso_horario,
                "params": {k: v for k, v in params.items() if k not in _FAIXA},
            },
            sort_keys=True,
        )
        self.contagem: Counter[str] = Counter()
        self.usadas: list[int] = []

    def chave(self, parte: Parte) -> str:
        texto = self.forma + json.dumps(parte, sort_keys=True)
        return hashlib.sha256(texto.encode()).hexdigest()

    def _consulta(self, parte: Parte) -> tuple[str, list[Any]]:
        de, ate = self.tipo.periodo_da_parte(self.ctx, parte)
        argumentos = [self.ctx.tenant_id, self.datadas, self.sem_data, de, ate]
        return _CONSULTAR, [*argumentos, self.ctx.tenant_id, self.chave(parte)]

    def parte(
        self, parte: Parte, calcular_parte: Callable[[CursorWrapper], Parcial]
    ) -> Parcial:
        """The chunk: the stored one if still valid, else computed by
        `calcular_parte` (the type's SQL on the cursor given) and stored.

        1. One message on the report's connection: BEGIN REPEATABLE READ
           READ ONLY, the store's limits, and `_CONSULTAR` (the versions and
           a stored chunk with exactly them): the snapshot starts there.
        2. A hit: COMMIT, and the chunk is marked used at the run's end.
        3. A miss: the type's SQL, in that same snapshot; then COMMIT and
           the store (one INSERT, and the eviction past the budget); on the
           primary both go in one message.
        4. The store failing in 1 (locked, missing): rolled back, and the
           chunk is computed as without reuse; failing in 3: not stored.
        """
        leitura = connections[self.banco]
        if leitura.in_atomic_block:
            return self._parte_numa_transacao(parte, calcular_parte)
        with leitura.cursor() as cursor:
            try:
                linha = _mensagem(
                    cursor,
                    ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", None),
                    (LIMITES_DO_ARMAZEM, None),
                    self._consulta(parte),
                ).fetchone()
            except DatabaseError as exc:
                _desfazer(cursor)
                if _cancelado(exc):
                    raise  # the attempt is being stopped (Execucao.parar)
                self._falhou("consulta")
                return calcular_parte(cursor)
            try:
                if linha[1] is not None:
                    cursor.execute("COMMIT")
                    return self._acertou(linha[1], linha[2])
                self._contar(FALHA)
                parcial = calcular_parte(cursor)
            except BaseException:
                _desfazer(cursor)
                raise
            if self.banco != DEFAULT_DB_ALIAS:
                cursor.execute("COMMIT")
                self.guardar(parte, parcial, linha[0])
                return parcial
            # The primary: the COMMIT and the store in one round trip.
            guardar = self._guardar(parte, parcial, linha[0])
            if guardar is None:
                cursor.execute("COMMIT")
                return parcial
            try:
                envolto = _mensagem(
                    cursor, ("COMMIT", None), (LIMITES_DO_ARMAZEM, None), *guardar
                )
            except DatabaseError:
                _desfazer(cursor)
                self._falhou("gravação")
            else:
                self._guardou(max(0, envolto.rowcount))
            return parcial

    def _parte_numa_transacao(
        self, parte: Parte, calcular_parte: Callable[[CursorWrapper], Parcial]
    ) -> Parcial:
        # A test's outer transaction: no other writer runs inside it, so a
        # savepoint stands for the snapshot.
        leitura = connections[self.banco]
        try:
            with transaction.atomic(using=self.banco), leitura.cursor() as cursor:
                cursor.execute(LIMITES_DO_ARMAZEM)
                cursor.execute(*self._consulta(parte))
                linha = cursor.fetchone()
        except DatabaseError:
            self._falhou("consulta")
            linha = None
        if linha is not None and linha[1] is not None:
            return self._acertou(linha[1], linha[2])
        with transaction.atomic(using=self.banco), leitura.cursor() as cursor:
            if linha is None:
                return calcular_parte(cursor)
            self._contar(FALHA)
            parcial = calcular_parte(cursor)
        self.guardar(parte, parcial, linha[0])
        return parcial

    def _acertou(self, id_: int, texto: str) -> Parcial:
        self._contar(ACERTO)
        self.usadas.append(id_)
        parcial: Parcial = json.loads(texto)
        return parcial

    def _guardar(
        self, parte: Parte, parcial: Parcial, versoes: str
    ) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]] | None:
        """The store's two statements, or None: larger than the budget."""
        texto = json.dumps(parcial)
        tamanho = len(texto.encode())
        orcamento = settings.RELATORIOS_REUSO_ORCAMENTO_BYTES
        if tamanho > orcamento:
            self._contar(RECUSADA)
            return None
        return (
            (
                _GUARDAR,
                {
                    "tenant": self.ctx.tenant_id,
                    "tipo": self.tipo.tipo,
                    "chave": self.chave(parte),
                    "parte": json.dumps(parte),
                    "parcial": texto,
                    "versoes": versoes,
                    "tamanho": tamanho,
                },
            ),
            (_DESPEJAR, {"tenant": self.ctx.tenant_id, "orcamento": orcamento}),
        )

    def guardar(self, parte: Parte, parcial: Parcial, versoes: str) -> None:
        """Stores the chunk (one statement), then evicts past the budget."""
        sentencas = self._guardar(parte, parcial, versoes)
        if sentencas is None:
            return
        try:
            despejadas = _no_primario(*sentencas)
        except DatabaseError:
            self._falhou("gravação")
            return
        self._guardou(despejadas)

    def _guardou(self, despejadas: int) -> None:
        self._contar(GUARDADA)
        self._contar(DESPEJADA, despejadas)

    def terminar(self) -> None:
        """Marks the reused chunks used and adds this run's counts to the
        tenant's (support's dashboard): one message."""
        if not self.contagem:
            return
        contagem = {
            nome: self.contagem[nome] for nome in (ACERTO, FALHA, GUARDADA, DESPEJADA)
        }
        sentencas: list[tuple[str, dict[str, Any]]] = [
            (_CONTAR, {"tenant": self.ctx.tenant_id, **contagem})
        ]
        if self.usadas:
            sentencas.insert(0, (_USADAS, {"usadas": self.usadas}))
        try:
            _no_primario(*sentencas)
        except DatabaseError:
            self._falhou("contagem")
        self.contagem.clear()
        self.usadas.clear()

    def _contar(self, desfecho: str, n: int = 1) -> None:
        if n:
            self.contagem[desfecho] += n
            metricas.partes(tipo=self.tipo.tipo, desfecho=desfecho, n=n)

    def _falhou(self, operacao: str) -> None:
        logger.warning(
            "armazém de partes indisponível na %s; a parte é calculada",
            operacao,
            exc_info=True,
            extra={
                "job_id": self.ctx.job_id,
                "tenant_id": self.ctx.tenant_id,
                "evento": "partes_indisponiveis",
            },
        )
        self._contar(ERRO)


def iniciar(
    tipo: TipoRelatorio, ctx: Contexto, params: Mapping[str, Any], *, banco: str
) -> Reuso | None:
    """The store for one run, or None: reuse off, or the type's chunks are
    not reusable (`partes_reutilizaveis`)."""
    if not ligado() or not tipo.partes_reutilizaveis:
        return None
    return Reuso(tipo, ctx, params, banco)


def _no_primario(*sentencas: tuple[str, Any]) -> int:
    """Runs the statements on the primary under the store's limits, all or
    none: one message (an implicit transaction), or a savepoint inside a
    test's transaction. Returns the last one's row count."""
    conexao = connections[DEFAULT_DB_ALIAS]
    if not conexao.in_atomic_block:
        with conexao.cursor() as cursor:
            return max(
                0, _mensagem(cursor, (LIMITES_DO_ARMAZEM, None), *sentencas).rowcount
            )
    with transaction.atomic(), conexao.cursor() as cursor:
        cursor.execute(LIMITES_DO_ARMAZEM)
        for sentenca, parametros in sentencas:
            cursor.execute(sentenca, parametros)
        return max(0, cursor.rowcount)


def _mensagem(cursor: CursorWrapper, *sentencas: tuple[str, Any]) -> CursorWrapper:
    """Runs the statements as one message (one round trip), the cursor left
    on the last one's result; as `execucao.CursorDaParte`, through a
    client-side binding cursor on the same connection."""
    cliente = psycopg.ClientCursor(cursor.db.connection)
    envolto = cursor.db.make_cursor(cliente)
    envolto.execute(";\n".join(cliente.mogrify(s, p) for s, p in sentencas))
    while cliente.nextset():
        pass
    return envolto


def _cancelado(exc: BaseException) -> bool:
    """A cancel request (the attempt stopped from outside), not the store's
    own statement timeout, which is a QueryCanceled too."""
    causa = exc.__cause__ or exc
    return isinstance(causa, psycopg.errors.QueryCanceled) and "user request" in str(
        causa
    )


def _desfazer(cursor: CursorWrapper) -> None:
    try:
        cursor.execute("ROLLBACK")
    except Exception:
        # The connection is gone; the worker reconnects before writing.
        logger.debug("rollback da parte falhou", exc_info=True)
