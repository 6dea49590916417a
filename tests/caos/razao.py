"""The soak's side-effect ledger: a report type that writes down every chunk it runs.

`teste_razao` (RELATORIOS_TIPOS_EXTRAS) computes each month of its period
like `teste_contado` (`teste_lento`'s pause, RELATORIOS_TESTE_PAUSA_S, then a
count of the month's sales, on whatever connection the worker gives it: the
replica or the primary), and
around that work it keeps the ledger `caos_razao` on a connection of its own
to the primary:

1. it takes a session advisory lock on its job, and one of the tenant's
   `RELATORIOS_MAX_EXECUTANDO_POR_TENANT` slot locks;
2. it inserts its row (job, tenant, month, pid, start) and, when a lock was
   already held, who held it (the holder's `application_name`, which names
   its pid);
3. after the work it stamps the row's end and releases the locks.

A session lock lives exactly as long as the process that holds it: a worker
killed with `kill -9` loses its socket and PostgreSQL drops the lock at once;
a worker frozen with SIGSTOP keeps it. So a conflict is a chunk that started
while another execution of the same job (or the tenant's last free slot) was
still alive, and the holder's pid says whether the fault injector had frozen
it (`invariantes.py` decides). This is what "no job ran its report twice
concurrently" means here: measured by the side effects, not by the product's
own rows.

The ledger's connection (one per worker process) is named
`caos-razao:<pid>`; the fault injector never terminates it (a dropped
ledger lock would hide an overlap).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.utils import CursorWrapper

from relatorios.tipos.base import Contexto, Parcial, Parte
from tests.caos.parametros import PREFIXO_DA_RAZAO
from tests.tipos_de_teste import Lento

# The first key of the two-int4 advisory locks: one namespace for jobs, one
# for the tenants' running slots (second key: tenant * FATOR + slot).
ESPACO_DO_JOB = 31_001
ESPACO_DO_TENANT = 31_002
FATOR_DO_TENANT = 64
PREFIXO = PREFIXO_DA_RAZAO

TABELA = """
CREATE TABLE IF NOT EXISTS caos_razao (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id bigint NOT NULL,
    tenant_id bigint NOT NULL,
    parte text NOT NULL,
    pid integer NOT NULL,
    inicio timestamptz NOT NULL DEFAULT clock_timestamp(),
    fim timestamptz,
    -- application_name of the holder of the job's lock, when it was held
    conflito_job text,
    -- the holders of every slot of the tenant, when none was free
    conflito_tenant text
)
"""


class Razao(Lento):
    """Lento's chunks (a month each, a pause), counted into the ledger, and
    each with the month's sales so the result comes from data."""

    tipo = "teste_razao"
    titulo = "Razão (soak)"

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        # A reference run outside any job (job 0) keeps no ledger.
        with registrar(ctx, parte) if ctx.job_id else nullcontext():
            super().gerar_parte(cursor, ctx, params, parte)
            cursor.execute(
                "SELECT count(*) FROM erp_vendas"
                " WHERE tenant_id = %s AND data_hora::date BETWEEN %s AND %s",
                [ctx.tenant_id, parte["inicio"], parte["fim"]],
            )
            return {"mes": parte["inicio"][:7], "vendas": cursor.fetchone()[0]}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {
            "linhas": list(parciais),
            "totais": {"vendas": sum(int(p["vendas"]) for p in parciais)},
        }


# This worker process's ledger connection (a connection does not survive a
# fork: keyed by pid).
_conexao: tuple[int, psycopg.Connection[Any]] | None = None


def _conectar() -> psycopg.Connection[Any]:
    global _conexao
    pid = os.getpid()
    if _conexao is None or _conexao[0] != pid or _conexao[1].closed:
        conexao = psycopg.connect(
            os.environ["DATABASE_URL"],
            autocommit=True,
            application_name=f"{PREFIXO}:{pid}",
            connect_timeout=10,
        )
        _conexao = (pid, conexao)
    return _conexao[1]


def fechar() -> None:
    """Close this process's ledger connection (the tests' own process)."""
    global _conexao
    if _conexao is not None:
        _conexao[1].close()
        _conexao = None


@contextmanager
def registrar(ctx: Contexto, parte: Parte) -> Iterator[None]:
    """The chunk's ledger row, its locks held for as long as the work runs.

    On this process's own connection (opened once): the locks it holds die
    with the process, and with nothing else.
    """
    conexao = _conectar()
    try:
        conflito_job = _travar_job(conexao, ctx.job_id)
        conflito_tenant = _ocupar_vaga(conexao, ctx.tenant_id)
        linha = conexao.execute(
            "INSERT INTO caos_razao"
            " (job_id, tenant_id, parte, pid, conflito_job, conflito_tenant)"
            " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            [
                ctx.job_id,
                ctx.tenant_id,
                parte["inicio"],
                os.getpid(),
                conflito_job,
                conflito_tenant,
            ],
        ).fetchone()
        assert linha is not None
        try:
            yield
        finally:
            conexao.execute(
                "UPDATE caos_razao SET fim = clock_timestamp() WHERE id = %s",
                [linha[0]],
            )
    finally:
        # Whatever happened, this process holds none of them between chunks.
        conexao.execute("SELECT pg_advisory_unlock_all()")


def _travar_job(conexao: psycopg.Connection[Any], job_id: int) -> str | None:
    """None when the job's lock was free (now ours), else who holds it."""
    livre = conexao.execute(
        "SELECT pg_try_advisory_lock(%s, %s)", [ESPACO_DO_JOB, job_id]
    ).fetchone()
    if livre is not None and livre[0]:
        return None
    return _donos(conexao, ESPACO_DO_JOB, [job_id])


def _ocupar_vaga(conexao: psycopg.Connection[Any], tenant_id: int) -> str | None:
    """None when one of the tenant's running slots was free (now ours), else
    the holders of all of them."""
    limite = settings.RELATORIOS_MAX_EXECUTANDO_POR_TENANT
    chaves = [tenant_id * FATOR_DO_TENANT + vaga for vaga in range(limite)]
    for chave in chaves:
        livre = conexao.execute(
            "SELECT pg_try_advisory_lock(%s, %s)", [ESPACO_DO_TENANT, chave]
        ).fetchone()
        if livre is not None and livre[0]:
            return None
    return _donos(conexao, ESPACO_DO_TENANT, chaves)


def _donos(conexao: psycopg.Connection[Any], espaco: int, chaves: list[int]) -> str:
    # A two-int4 advisory lock shows its keys as classid and objid.
    linhas = conexao.execute(
        """
        SELECT a.application_name FROM pg_locks l
          JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
           AND l.classid = %s AND l.objid = ANY(%s) AND l.pid <> pg_backend_pid()
         ORDER BY 1
        """,
        [espaco, chaves],
    ).fetchall()
    return ",".join(nome for (nome,) in linhas) or "?"
