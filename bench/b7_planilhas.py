"""B7: a 100,000-line result as a download: time and peak memory, .xlsx and .csv.

One `pronto` job of 100,000 sales lines (10,000 with --quick) is written to
the database in SQL; then, for each format, a fresh Python process sets
Django up, takes the job as the download view does, and writes the whole
file (apresentacao.excel.gravar_xlsx; apresentacao.planilha.gravar_csv). It
prints the seconds and its resident memory before and at its peak (VmHWM): the peak
over the baseline is what producing the file cost in memory, which must not
grow with the number of lines (XlsxWriter's constant_memory, a server-side
cursor).

`python -m bench.b7_planilhas <xlsx|csv> <job id>` is that child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from bench.ambiente import PYTHON, RAIZ, ambiente
from bench.contexto import Contexto, linha
from bench.preparo import criar_tenant


def executar(ctx: Contexto) -> None:
    n = 10_000 if ctx.rapido else 100_000
    tenant_id, _ = criar_tenant("Rede Planilhas", "planilhas")
    job_id = _job_pronto(ctx, tenant_id, n)
    for formato in ("xlsx", "csv"):
        medida = _medir(formato, job_id)
        megas = medida["bytes"] / 2**20
        linha(
            f"B7 {formato}",
            f"{n:,} lines in {medida['segundos']:.2f}s, {megas:.1f} MB"
            f"  peak RSS {medida['pico_kb'] / 1024:.0f} MB"
            f" (+{(medida['pico_kb'] - medida['antes_kb']) / 1024:.0f} MB over the"
            f" {medida['antes_kb'] / 1024:.0f} MB of a process with Django loaded)",
        )


def _job_pronto(ctx: Contexto, tenant_id: int, n: int) -> int:
    """A finished vendas job whose result has `n` daily lines, built in SQL."""
    with ctx.banco.conectar() as conexao:
        criado = conexao.execute(
            """
                INSERT INTO relatorio_jobs
                       (chave, tenant_id, tipo, params, status, tentativas,
                        progresso, resultado, concluido_em, expira_em)
                SELECT 'b7-' || %(n)s, %(tenant)s, 'vendas',
                       '{"inicio": "2026-01-01", "fim": "2026-12-31",
                         "agrupar": "dia", "lojas": []}',
                       'pronto', 1, 100,
                       jsonb_build_object(
                           'agrupar', 'dia',
                           'linhas', jsonb_agg(jsonb_build_object(
                               'periodo', to_char(date '2026-01-01' + i %% 365,
                                                  'YYYY-MM-DD'),
                               'loja', 'L' || lpad((i %% 300)::text, 3, '0'),
                               'loja_nome', 'Loja Centro ' || (i %% 300),
                               'vendas', i %% 97,
                               'quantidade', i %% 211,
                               'receita', ((i %% 100000) / 7.0)::numeric(20, 2)::text)
                               ORDER BY i),
                           'totais', jsonb_build_object(
                               'vendas', sum(i %% 97),
                               'quantidade', sum(i %% 211),
                               'receita',
                               sum(((i %% 100000) / 7.0)::numeric(20, 2))::text)),
                       now(), now() + interval '1 day'
                  FROM generate_series(1, %(n)s) AS i
                RETURNING id
                """,
            {"n": n, "tenant": tenant_id},
        ).fetchone()
    assert criado is not None
    return int(criado[0])


def _medir(formato: str, job_id: int) -> dict[str, float]:
    resultado = subprocess.run(
        [PYTHON, "-m", "bench.b7_planilhas", formato, str(job_id)],
        cwd=RAIZ,
        env=ambiente(),
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    medida: dict[str, float] = json.loads(resultado.stdout.strip().splitlines()[-1])
    return medida


def _vm(campo: str) -> int:
    with open("/proc/self/status") as status:
        for texto in status:
            if texto.startswith(campo + ":"):
                return int(texto.split()[1])
    return 0


def _filho(formato: str, job_id: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from relatorios.apresentacao import excel, planilha
    from relatorios.jobs import consultas
    from relatorios.models import RelatorioJob

    tenant_id = RelatorioJob.objects.values_list("tenant_id", flat=True).get(pk=job_id)
    # What the download views read (api/jobs.py): the job without its result.
    job = consultas.job_do_tenant(
        tenant_id=tenant_id,
        job_id=job_id,
        campos=("id", "tenant_id", "tipo", "status", "params"),
    )
    # Imports and the first connection done: what any web worker holds.
    antes = _vm("VmRSS")
    inicio = time.monotonic()
    with tempfile.TemporaryFile() as arquivo:
        if formato == "xlsx":
            excel.gravar_xlsx(job, arquivo)
        else:
            planilha.gravar_csv(job, arquivo)
        tamanho = arquivo.tell()
    segundos = time.monotonic() - inicio
    print(
        json.dumps(
            {
                "segundos": segundos,
                "bytes": tamanho,
                "antes_kb": antes,
                "pico_kb": _vm("VmHWM"),
            }
        )
    )


if __name__ == "__main__":
    _filho(sys.argv[1], int(sys.argv[2]))
