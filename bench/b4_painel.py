"""B4 dashboard: the support admin's operations dashboard with 0 and with 10
million finished jobs (relatorios/admin/consultas_do_painel.py).

B4's history gets what the dashboard reads beside the jobs: an attempt in the
ledger per finished job, and a thousand daily schedules with two years of
occurrences (5% of them missed their deadline, half of those arrived late).
The dashboard's statements are captured from `painel.montar()` (the page's
own reads), then each is run under `EXPLAIN (ANALYZE, BUFFERS)` a few times:
its median execution time, the buffers it touched and the indexes it read.
`page` is `painel.montar()` whole, in the process, as the view calls it.
At 10M each statement that reads one of the dashboard's own indexes is also
run once without it (the index dropped inside a transaction that is rolled
back): what the index buys.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from typing import Any

import psycopg

from bench.contexto import Contexto, linha, nota

SQL_TENTATIVAS = """
INSERT INTO relatorio_tentativas
       (job_id, numero, iniciado_em, terminado_em, desfecho, erro, trabalhador)
SELECT j.id, 1, j.iniciado_em, j.concluido_em, j.status, j.erro, 'bench:1'
  FROM relatorio_jobs j
 WHERE j.status IN ('pronto', 'falhou')
   AND NOT EXISTS (SELECT 1 FROM relatorio_tentativas t WHERE t.job_id = j.id)
"""

SQL_AGENDAMENTOS = """
INSERT INTO relatorio_agendamentos
       (nome, tipo, periodo, agrupar, lojas, cron, prazo, destinatarios,
        recuperacao, ativo, tenant_id, entrega, webhooks)
SELECT 'bench-painel ' || i, 'vendas', 'ontem', 'dia', '[]', '0 3 * * *',
       interval '3 hours', '[]', 'ultima', false,
       (%(tenants)s::bigint[])[1 + i %% cardinality(%(tenants)s::bigint[])],
       'link', '[]'
  FROM generate_series(1, %(n)s) AS i
"""

# Two years of daily occurrences of each schedule, already settled.
SQL_OCORRENCIAS = """
INSERT INTO relatorio_ocorrencias
       (agendamento_id, tenant_id, planejado_para, params, estado, motivo,
        prazo_em, disparada_em, conferida)
SELECT a.id, a.tenant_id, d, NULL, 'disparada', '', d + interval '3 hours', d, true
  FROM relatorio_agendamentos a,
       generate_series(date_trunc('day', now()) - interval '729 days 21 hours',
                       date_trunc('day', now()) - interval '21 hours',
                       interval '1 day') AS d
 WHERE a.nome LIKE 'bench-painel %'
"""

SQL_ALERTAS = """
INSERT INTO relatorio_alertas (ocorrencia_id, tenant_id, motivo, aberto_em,
                               fechado_em, nota)
SELECT id, tenant_id, 'o prazo venceu com o relatório ainda na fila', prazo_em,
       CASE WHEN id % 40 = 0 THEN prazo_em + interval '1 hour' END, ''
  FROM relatorio_ocorrencias
 WHERE id % 20 = 0
"""

# The dashboard's own indexes (migration 0026), and the table of each.
INDICES_DO_PAINEL = {
    "relatorio_jobs_concluidos": "relatorio_jobs",
    "relatorio_tentativas_inicio": "relatorio_tentativas",
    "relatorio_ocorr_planejadas": "relatorio_ocorrencias",
}
EXECUCOES = 5


def carregar(ctx: Contexto, *, agendamentos: int = 1000) -> None:
    """What the dashboard reads besides the jobs, for B4's history."""
    inicio = time.monotonic()
    with ctx.banco.conectar() as conexao:
        tenants = [t for (t,) in conexao.execute("SELECT id FROM tenants ORDER BY id")]
        conexao.execute("SET work_mem = '512MB'")
        conexao.execute(SQL_TENTATIVAS)
        conexao.execute(SQL_AGENDAMENTOS, {"tenants": tenants, "n": agendamentos})
        conexao.execute(SQL_OCORRENCIAS)
        conexao.execute(SQL_ALERTAS)
        for tabela in (
            # Again after B4's rounds: the visibility map of the pages they
            # touched, which index-only scans read.
            "relatorio_jobs",
            "relatorio_tentativas",
            "relatorio_ocorrencias",
            "relatorio_alertas",
        ):
            conexao.execute(f"VACUUM (ANALYZE) {tabela}")
        contagem = conexao.execute(
            "SELECT (SELECT count(*) FROM relatorio_tentativas),"
            " (SELECT count(*) FROM relatorio_ocorrencias),"
            " (SELECT count(*) FROM relatorio_jobs"
            "   WHERE concluido_em >= now() - interval '24 hours')"
        ).fetchone()
    tentativas, ocorrencias, no_dia = contagem or (0, 0, 0)
    nota(
        f"B4 dashboard: {tentativas:,} attempts in the ledger, {agendamentos} "
        f"schedules and {ocorrencias:,} occurrences written and analyzed in "
        f"{time.monotonic() - inicio:.0f}s; {no_dia:,} jobs finished in the "
        "last 24 h"
    )


def apagar(ctx: Contexto) -> None:
    """The schedules, occurrences and alerts `carregar` wrote (the jobs and
    the ledger go with B4's jobs, at the next scenario's start)."""
    with ctx.banco.conectar() as conexao:
        conexao.execute("TRUNCATE relatorio_alertas, relatorio_ocorrencias CASCADE")
        conexao.execute(
            "DELETE FROM relatorio_agendamentos WHERE nome LIKE 'bench-painel %'"
        )


def medir(ctx: Contexto) -> dict[str, dict[str, Any]]:
    """Each dashboard statement's median execution time, buffers and indexes;
    and the page's reads whole (`page`)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from relatorios.admin import consultas_do_painel, painel

    def pagina() -> Any:
        return painel.montar(consultas_do_painel.fuso_da_maioria())

    pagina()  # warm-up: the first run pays for the catalog lookups
    tempos = []
    for _ in range(EXECUCOES):
        inicio = time.perf_counter()
        with CaptureQueriesContext(connection) as capturadas:
            pagina()
        tempos.append(1000 * (time.perf_counter() - inicio))
    medidas: dict[str, dict[str, Any]] = {
        "page": {"ms": statistics.median(tempos), "sql": "", "indices": []}
    }
    with ctx.banco.conectar() as conexao:
        for consulta in capturadas:
            sql = consulta["sql"]
            planos = [_analisar(conexao, sql) for _ in range(EXECUCOES)]
            medidas[_nome(sql)] = {
                "ms": statistics.median(p["Execution Time"] for p in planos),
                "buffers": _buffers(planos[-1]["Plan"]),
                "linhas_do_heap": _heap(planos[-1]["Plan"]),
                "indices": sorted(_indices(planos[-1]["Plan"])),
                "sql": sql,
            }
    return medidas


def sem_indice(ctx: Contexto, medidas: dict[str, dict[str, Any]]) -> dict[str, float]:
    """For each statement that reads a dashboard index: its execution time
    once without that index (dropped in a transaction, then rolled back)."""
    resultado: dict[str, float] = {}
    with ctx.banco.conectar() as conexao:
        for nome, m in medidas.items():
            proprios = [i for i in m["indices"] if i in INDICES_DO_PAINEL]
            if not proprios:
                continue
            with conexao.transaction(force_rollback=True):
                for indice in proprios:
                    conexao.execute(f"DROP INDEX {indice}")
                resultado[nome] = _analisar(conexao, m["sql"])["Execution Time"]
    return resultado


def relatar(
    antes: dict[str, dict[str, Any]],
    depois: dict[str, dict[str, Any]],
    sem: dict[str, float],
    rotulo: str,
) -> None:
    for nome, d in depois.items():
        a = antes.get(nome, {"ms": float("nan")})
        texto = (
            f"0 jobs: {a['ms']:.2f} ms  {rotulo} jobs: {d['ms']:.2f} ms"
            f"  ratio {d['ms'] / a['ms']:.1f}x"
        )
        if "buffers" in d:
            texto += f"  buffers {d['buffers']:,}"
        if d.get("linhas_do_heap"):
            texto += f"  heap fetches {d['linhas_do_heap']:,}"
        if d["indices"]:
            texto += f"  via {', '.join(d['indices'])}"
        if nome in sem:
            texto += f"  (without its index: {sem[nome]:,.0f} ms)"
        linha(f"B4 dashboard {nome}", texto)


def _analisar(conexao: psycopg.Connection, sql: str) -> dict[str, Any]:
    linha_ = conexao.execute(
        f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}"
    ).fetchone()
    assert linha_ is not None
    plano = linha_[0]
    if isinstance(plano, str):
        plano = json.loads(plano)
    resultado: dict[str, Any] = plano[0]
    return resultado


def _buffers(no: dict[str, Any]) -> int:
    """Shared blocks hit and read by the whole statement (the top node's
    counts include its children's)."""
    return int(no.get("Shared Hit Blocks", 0)) + int(no.get("Shared Read Blocks", 0))


def _heap(no: dict[str, Any]) -> int:
    """Heap fetches of the index-only scans: rows whose page the visibility
    map did not know all-visible."""
    return int(no.get("Heap Fetches", 0)) + sum(_heap(f) for f in no.get("Plans", []))


def _indices(no: dict[str, Any]) -> set[str]:
    nomes = {no["Index Name"]} if "Index Name" in no else set()
    for filho in no.get("Plans", []):
        nomes |= _indices(filho)
    return nomes


# Each statement by the table its aggregate reads first.
_NOMES = (
    ("relatorio_ocorrencias", "occurrences/day"),
    ("relatorio_tentativas", "tenants by time"),
    ("django_q_ormq", "queue"),
    ("relatorio_clusters", "clusters"),
    ("row_number()", "failures"),
    ("date_trunc('hour'", "finished/hour"),
    ("GROUP BY tenant_id", "tenants by jobs"),
)


def _nome(sql: str) -> str:
    for trecho, nome in _NOMES:
        if trecho in sql:
            return nome
    return re.sub(r"\s+", " ", sql)[:40]
