"""B5 reports: each report type through a real cluster vs its own SQL run directly.

A tenant with 5 million sales and 1 million stock movements (gerar_dados). For
each type, with a realistic heavy request:

1. The SQL: the type runs once in this process under CaptureQueriesContext
   (execucao.calcular, the worker's own chunk loop); its report statements
   (not the per-chunk SET TRANSACTION / set_config) are replayed on a plain
   psycopg connection, with nothing of Django around them: the "direct" time.
2. The job: submitted through pedidos.submeter to a running qcluster; its
   time is `concluido_em - iniciado_em` (claim to finish, stamped by
   PostgreSQL). Results are valid for 1 s here (RELATORIOS_VALIDADE_S), so the
   same request resubmitted a moment later runs again.
3. The worker's peak RSS: VmHWM of the cluster's processes, reset through
   /proc/<pid>/clear_refs before each job, read after it.

Job, direct and in-process runs alternate; each figure is the median of its
runs. The in-process chunk loop (bracketed) splits the gap: chunk loop minus
direct is the per-chunk transactions and Python; job minus chunk loop is the
queue, the claim, the progress writes and the result's write.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from pathlib import Path
from typing import Any

from bench.ambiente import Processo, iniciar_cluster
from bench.contexto import Contexto, linha, nota
from bench.preparo import criar_tenant, gerar_dados

PEDIDOS: list[tuple[str, dict[str, Any]]] = [
    ("vendas", {"inicio": "2025-01-01", "fim": "2025-12-31", "agrupar": "dia"}),
    ("comissoes", {"inicio": "2025-01-01", "fim": "2025-12-31", "agrupar": "mes"}),
    ("estoque", {"inicio": "2025-07-01", "fim": "2025-12-31"}),
    ("fechamento", {"inicio": "2025-12-01", "fim": "2025-12-31"}),
]
# Transaction control and the per-chunk settings are the job machinery's, not
# the report's SQL.
_CONTROLE = ("SET TRANSACTION", "SELECT set_config", "BEGIN", "COMMIT", "ROLLBACK")


def executar(ctx: Contexto) -> None:
    vendas = 200_000 if ctx.rapido else 5_000_000
    movimentos = vendas // 5
    repeticoes = 1 if ctx.rapido else 3
    tenant_id, _ = criar_tenant("Rede Relatorios", "relatorios")
    segundos = gerar_dados(
        tenant_id, lojas=20, vendas=vendas, movimentos=movimentos, seed=7
    )
    nota(
        f"B5: gerar_dados {vendas:,} sales + {movimentos:,} movements "
        f"(20 stores) in {segundos:.0f}s"
    )
    # Every run computes every chunk (the chunk store, jobs.reuso, would serve
    # the repeated request from its store: B11 measures that).
    cluster = iniciar_cluster(
        "b5", RELATORIOS_VALIDADE_S="1", RELATORIOS_REUSO_PARTES="false"
    )
    try:
        for tipo, pedido in PEDIDOS:
            preparado = _preparar(tenant_id, tipo, pedido)
            sqls = _capturar(preparado)
            _direto(ctx, sqls)  # warm-up: the same pages in cache for both
            jobs: list[float] = []
            diretos: list[float] = []
            calculos: list[float] = []
            picos: list[int] = []
            for _ in range(repeticoes):
                duracao, pico = _job(cluster, tenant_id, tipo, pedido)
                jobs.append(duracao)
                picos.append(pico)
                diretos.append(_direto(ctx, sqls))
                calculos.append(_calcular(preparado))
            job, direto = statistics.median(jobs), statistics.median(diretos)
            linha(
                f"B5 {tipo}",
                f"job {job:.2f}s  direct SQL {direto:.2f}s ({len(sqls)} statements)"
                f"  ratio {job / direto:.2f}x (target <= 1.1x)"
                f"  worker peak RSS {max(picos) / 1024:.0f} MB (target < 200 MB)"
                f"  [chunk loop in-process {statistics.median(calculos):.2f}s]",
            )
    finally:
        cluster.parar()


def _preparar(tenant_id: int, tipo: str, pedido: dict[str, Any]) -> tuple[Any, ...]:
    """What execucao.calcular takes: the type, the context and the params."""
    from relatorios import tipos
    from relatorios.models import Tenant
    from relatorios.tipos.base import Contexto as ContextoRelatorio

    tipo_relatorio = tipos.obter(tipo)
    fuso = Tenant.objects.get(pk=tenant_id).fuso_horario
    contexto = ContextoRelatorio(job_id=0, tenant_id=tenant_id, fuso_horario=fuso)
    return tipo_relatorio, contexto, tipo_relatorio.normalizar(pedido)


def _calcular(preparado: tuple[Any, ...]) -> float:
    """The worker's chunk loop (execucao.calcular) in this process: SQL plus
    transactions, settings and Python, without queue, claim or result write."""
    from django.test import override_settings

    from relatorios.jobs import execucao

    tipo_relatorio, contexto, params = preparado
    with override_settings(RELATORIOS_REUSO_PARTES=False):
        inicio = time.monotonic()
        execucao.calcular(tipo_relatorio, contexto, params, timeout_s=3600)
        return time.monotonic() - inicio


def _capturar(preparado: tuple[Any, ...]) -> list[str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from relatorios.jobs import execucao

    with CaptureQueriesContext(connection) as capturadas:
        _calcular(preparado)
    # A chunk's statement travels behind its limits in one message: keep the
    # statement.
    capturados = capturadas.captured_queries
    sqls = [execucao.sem_limites(q["sql"] or "") for q in capturados]
    return [sql for sql in sqls if sql and not sql.lstrip().startswith(_CONTROLE)]


def _direto(ctx: Contexto, sqls: list[str]) -> float:
    with ctx.banco.conectar() as conexao:
        inicio = time.monotonic()
        for sql in sqls:
            conexao.execute(sql).fetchall()
        return time.monotonic() - inicio


def _job(
    cluster: Processo, tenant_id: int, tipo: str, pedido: dict[str, Any]
) -> tuple[float, int]:
    """One run of the request by the cluster: (claim -> finish s, peak RSS kB)."""
    from relatorios.jobs import pedidos
    from relatorios.models import EstadoDoJob, RelatorioJob

    pids = cluster.pids()
    for pid in pids:
        _zerar_pico(pid)
    limite = time.monotonic() + 900
    while True:
        submissao = pedidos.submeter(
            tenant_id=tenant_id, tipo=tipo, params_brutos=pedido, usuario_id=None
        )
        if submissao.criado:
            break
        # The previous run's result is still valid (1 s): ask again shortly.
        if time.monotonic() > limite:
            raise RuntimeError(f"B5 {tipo}: could not start a new run")
        time.sleep(0.2)
    job_id = submissao.job.id
    while True:
        job = RelatorioJob.objects.get(pk=job_id)
        if job.status in (EstadoDoJob.PRONTO, EstadoDoJob.FALHOU):
            break
        if time.monotonic() > limite:
            raise RuntimeError(f"B5 {tipo}: job {job_id} did not finish")
        time.sleep(0.1)
    if job.status != EstadoDoJob.PRONTO:
        raise RuntimeError(f"B5 {tipo}: job {job_id} failed: {job.erro}")
    if job.concluido_em is None or job.iniciado_em is None:
        raise RuntimeError(f"B5 {tipo}: job {job_id} has no timestamps")
    pico = max((_pico(pid) for pid in cluster.pids()), default=0)
    return (job.concluido_em - job.iniciado_em).total_seconds(), pico


def _zerar_pico(pid: int) -> None:
    # "5" resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0).
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def _pico(pid: int) -> int:
    try:
        texto = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for registro in texto.splitlines():
        if registro.startswith("VmHWM:"):
            return int(registro.split()[1])
    return 0
