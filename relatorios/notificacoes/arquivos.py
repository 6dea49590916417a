"""A finished result's workbook: built once, kept in the database, read in slices.

Building a 35,000-line .xlsx costs seconds of CPU. It used to be built again
for every recipient of a scheduled report, on every retry, and on every
click of a download link: one tenant's schedule held both workers of a
cluster for a minute, and four clicks on a link slowed every other tenant's
requests for seconds. Now the file of a result, keyed by the job *and* the
instant its result was finished (`concluido_em`: a recomputed result is
another file), is built once and stored (`relatorio_arquivos`); deliveries
attach it and downloads stream it from there.

Who builds it:
- a scheduled delivery that attaches it, in the cluster, under its tenant's
  delivery slot (`notificacoes.vagas`): once per result, never again on a
  retry;
- a download that finds none (a link-only delivery, an ad-hoc report), in
  the web process, at most one build per process, one per file and one per
  tenant at a time across the deployment; a click that finds one running
  is told to come back (`Ocupado`: a 503, or a 429 for the tenant's own
  other build, with Retry-After), never kept waiting on a web thread.

Bounded: a result over RELATORIOS_XLSX_MAX_LINHAS lines has no workbook
(`GrandeDemais`: the CSV, which streams from the stored result, carries
it). Files leave with their job (`jobs.retencao`) and once stale or older
than a link's life (`expurgar`); a file is a cache: any of them can be built
again.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.backends.utils import CursorWrapper

from relatorios.apresentacao import excel
from relatorios.models import RelatorioJob
from relatorios.operacao import metricas

logger = logging.getLogger(__name__)

XLSX = "xlsx"

# pg_advisory_xact_lock(classid, objid): one build per job, one per tenant.
_CLASSE_DO_JOB = 0x52454C41  # "RELA"
_CLASSE_DO_TENANT = 0x52454C54  # "RELT"

# Workbook bytes per byte of the stored result, an upper estimate
# (tamanho_estimado).
ESTIMATIVA_POR_BYTE = 1.0

# A download slice: a few round trips for a file of megabytes, and never the
# whole file in a web worker's memory.
FATIA = 1 << 20

# One build at a time in a web process: a build holds the GIL for seconds,
# and every other request that process serves pays for it.
_um_por_processo = threading.BoundedSemaphore(1)


class GrandeDemais(Exception):
    """The result has more lines than a workbook may hold here."""

    def __init__(self, linhas: int) -> None:
        super().__init__(
            f"o resultado tem {linhas} linhas, acima do limite de "
            f"{settings.RELATORIOS_XLSX_MAX_LINHAS} para .xlsx: baixe o CSV"
        )
        self.linhas = linhas


class Ocupado(Exception):
    """A build is running where this one would: come back in `espera_s`.

    `do_tenant`: it is the tenant's own other build (its budget, a 429);
    else the same file is on its way, or this process is busy (a 503)."""

    def __init__(self, motivo: str, *, do_tenant: bool = False) -> None:
        super().__init__(motivo)
        self.do_tenant = do_tenant
        self.espera_s = max(1, round(settings.RELATORIOS_ARQUIVO_ESPERA_S))


@dataclass(frozen=True)
class Guardado:
    """A stored file of one result."""

    id: int
    nome: str
    tamanho: int
    linhas: int
    tipo_de_conteudo: str = excel.TIPO_DE_CONTEUDO


def guardado(job: RelatorioJob) -> Guardado | None:
    """The stored workbook of the job's current result, if built."""
    if job.concluido_em is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT id, tamanho, linhas FROM relatorio_arquivos
             WHERE job_id = %s AND concluido_em = %s AND formato = %s
            """,
            [job.pk, job.concluido_em, XLSX],
        )
        linha = cursor.fetchone()
    if linha is None:
        return None
    return Guardado(
        id=linha[0],
        nome=excel.nome_do_arquivo_xlsx(job),
        tamanho=linha[1],
        linhas=linha[2],
    )


def contar_linhas(job: RelatorioJob) -> int:
    """How many lines the stored result has, read in the database."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT CASE WHEN jsonb_typeof(resultado -> 'linhas') = 'array'
                        THEN jsonb_array_length(resultado -> 'linhas') ELSE 0 END
              FROM relatorio_jobs WHERE id = %s
            """,
            [job.pk],
        )
        linha = cursor.fetchone()
    return int(linha[0]) if linha else 0


def tamanho_estimado(job: RelatorioJob) -> int:
    """The workbook's size before building it: the stored result's size on
    disk (jsonb, compressed as a zip compresses the sheet), scaled by
    ESTIMATIVA_POR_BYTE (an assumed bound: no test measures it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_size(resultado) FROM relatorio_jobs WHERE id = %s",
            [job.pk],
        )
        linha = cursor.fetchone()
    return int((linha[0] or 0) * ESTIMATIVA_POR_BYTE) if linha else 0


def obter(job: RelatorioJob, *, na_web: bool) -> Guardado:
    """The job's workbook, built now if it was not yet (the caller checked
    tenant and status: a `pronto` job).

    1. Stored already: answered from the table.
    2. Over RELATORIOS_XLSX_MAX_LINHAS lines: GrandeDemais, nothing built.
    3. In the web (`na_web`) nothing waits, a waiting request holds one of
       the few threads every tenant shares: this process's one build slot,
       the job's build lock and the tenant's, each taken or Ocupado.
       In a worker, the job's lock is waited for, up to
       RELATORIOS_ARQUIVO_ESPERA_S (a concurrent build of the same file is
       then answered from the table).
    4. Build it to a temporary file and store it, in the lock's transaction.
    """
    if (pronto := guardado(job)) is not None:
        return pronto
    linhas = contar_linhas(job)
    if linhas > settings.RELATORIOS_XLSX_MAX_LINHAS:
        raise GrandeDemais(linhas)
    if not na_web:
        return _construir(job, na_web=False)
    if not _um_por_processo.acquire(blocking=False):
        raise Ocupado("outro arquivo está sendo gerado neste servidor")
    try:
        return _construir(job, na_web=True)
    finally:
        _um_por_processo.release()


def _construir(job: RelatorioJob, *, na_web: bool) -> Guardado:
    with transaction.atomic(), connection.cursor() as cursor:
        if na_web:
            if not _tentar_travar(cursor, _CLASSE_DO_JOB, job.pk):
                raise Ocupado("este arquivo está sendo gerado")
        else:
            espera_ms = int(settings.RELATORIOS_ARQUIVO_ESPERA_S * 1000)
            cursor.execute(f"SET LOCAL lock_timeout = {espera_ms}")
            try:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, (%s %% 2147483647)::int)",
                    [_CLASSE_DO_JOB, job.pk],
                )
            except OperationalError as exc:
                # lock_timeout: the same file is being built, for longer
                # than a worker waits; anything else is not ours to hide.
                if getattr(exc.__cause__, "sqlstate", None) != "55P03":
                    raise
                raise Ocupado("este arquivo está sendo gerado") from exc
            cursor.execute("SET LOCAL lock_timeout = 0")
        if (pronto := guardado(job)) is not None:
            return pronto  # built while we waited for the lock
        if na_web and not _tentar_travar(cursor, _CLASSE_DO_TENANT, job.tenant_id):
            raise Ocupado(
                "outro arquivo deste cliente está sendo gerado", do_tenant=True
            )
        _gravar(job)
    construido = guardado(job)
    assert construido is not None  # inserted above, or by a race's winner
    return construido


def _tentar_travar(cursor: CursorWrapper, classe: int, objeto: int) -> bool:
    cursor.execute(
        "SELECT pg_try_advisory_xact_lock(%s, (%s %% 2147483647)::int)",
        [classe, objeto],
    )
    return bool(cursor.fetchone()[0])


def _gravar(job: RelatorioJob) -> None:
    inicio = time.monotonic()
    with tempfile.TemporaryFile(prefix="relatorio-", suffix=".xlsx") as arquivo:
        linhas = excel.gravar_xlsx(job, arquivo)
        tamanho = arquivo.tell()
        arquivo.seek(0)
        conteudo = arquivo.read()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO relatorio_arquivos
                   (job_id, concluido_em, formato, conteudo, tamanho, linhas)
            VALUES (%s, %s, %s, %s, %s, %s)
            ON CONFLICT (job_id, concluido_em, formato) DO NOTHING
            """,
            [job.pk, job.concluido_em, XLSX, conteudo, tamanho, linhas],
        )
    duracao = time.monotonic() - inicio
    metricas.arquivo_gerado(formato=XLSX, segundos=duracao)
    logger.info(
        "arquivo gerado",
        extra={
            "job_id": job.pk,
            "bytes": tamanho,
            "linhas": linhas,
            "duracao_s": round(duracao, 3),
        },
    )


def conteudo(arquivo: Guardado) -> bytes:
    """The whole file (an attachment, within its cap)."""
    return b"".join(fatias(arquivo))


def fatias(arquivo: Guardado) -> Iterator[bytes]:
    """The file in slices of FATIA bytes, one statement each: a download
    streams without the file in memory. Ends early if the file was removed
    meanwhile (the client sees a short body against Content-Length)."""
    for inicio in range(0, arquivo.tamanho, FATIA):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT substring(conteudo FROM %s FOR %s) FROM relatorio_arquivos"
                " WHERE id = %s",
                [inicio + 1, FATIA, arquivo.id],
            )
            linha = cursor.fetchone()
        if linha is None:
            return
        yield bytes(linha[0])


def esquecer(*, job_id: int) -> int:
    """Remove a job's stored files (its result was expired by support)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM relatorio_arquivos WHERE job_id = %s", [job_id])
        return cursor.rowcount


def expurgar(*, lote: int = 100) -> int:
    """Remove stale files: of a result no longer current (recomputed, failed,
    expired by support), or older than a link's life. Safe with any number
    of clusters running it (SKIP LOCKED)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            DELETE FROM relatorio_arquivos
             WHERE id IN (
                SELECT a.id FROM relatorio_arquivos a
                  LEFT JOIN relatorio_jobs j
                    ON j.id = a.job_id AND j.status = 'pronto'
                   AND j.concluido_em = a.concluido_em
                 WHERE j.id IS NULL
                    OR a.criado_em < now() - make_interval(days => %s)
                 LIMIT %s FOR UPDATE OF a SKIP LOCKED)
            """,
            [settings.RELATORIOS_LINK_VALIDADE_DIAS, lote],
        )
        return cursor.rowcount
