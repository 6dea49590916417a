"""B3 pipeline: what the job machinery adds on top of django-q2 itself.

Both sides are submitted the same way and measured in two phases (issue 11:
the first recordings compared HTTP submits against in-process enqueues, so
the ratio was mostly the submit rate):
1. Submit, cluster stopped: N small report jobs through `pedidos.submeter`
   in this process (one store-day of a small tenant: one chunk, trivial SQL),
   then N bare `async_task`s of a no-op function. Submits/s each.
2. Execution: a real qcluster (production settings) is started on the full
   queue and drains it; jobs/s = N / (last finish - first start), where a
   report starts at `iniciado_em` and a no-op at its `stopped` (it starts and
   stops at once). The cluster's boot is outside the window.

Successful task records are kept (Q_SAVE_LIMIT=0) in both runs so that every
no-op task has its timestamps; the monitor's pruning of a 100-record history
is then skipped for both. The tenant's pending and in-flight caps are lifted:
with them, one tenant's tiny jobs are dispatched two per queue poll (the
fairness policy, not the machinery's cost).
"""

from __future__ import annotations

import statistics
import time
from datetime import date, timedelta
from typing import Any

from bench.ambiente import (
    MedidorCpu,
    Perfil,
    formatar_cpu,
    iniciar_cluster,
    pids_do_banco,
)
from bench.contexto import Contexto, linha, nota
from bench.preparo import criar_tenant, gerar_dados

SEM_LIMITE = str(10**9)
FUNCAO_NADA = "bench.tarefas.nada"


def executar(ctx: Contexto) -> None:
    n = 200 if ctx.rapido else 2000
    tenant_id, _ = criar_tenant("Rede Pipeline", "pipeline")
    gerar_dados(tenant_id, lojas=4, vendas=5000, produtos=20, seed=3)
    pedidos = _pedidos(n)
    # One tenant's burst: its caps (20 pending, 2 in flight) lifted, or the
    # figure would measure the fairness policy (two jobs per queue poll of
    # this tenant) rather than the machinery. Here for this process's
    # submits, and for the cluster's claims through its environment.
    sem_limites = {
        "RELATORIOS_MAX_PENDENTES_POR_TENANT": SEM_LIMITE,
        "RELATORIOS_MAX_EXECUTANDO_POR_TENANT": SEM_LIMITE,
    }
    envio = _submeter(tenant_id, pedidos)
    uso = _drenar(
        ctx,
        "b3-relatorios",
        sem_limites,
        lambda: _contar_terminados(tenant_id),
        n,
        "report jobs",
    )
    relatorios_t = _tempos_relatorios(tenant_id)
    envio_nada = _enfileirar_nadas(n)
    uso_nada = _drenar(ctx, "b3-nada", sem_limites, _contar_nadas, n, "no-ops")
    nadas = _tempos_nadas()

    linha(
        "B3 submit",
        f"reports {n / envio:.0f}/s (pedidos.submeter), bare {n / envio_nada:.0f}/s"
        f" (async_task), in-process, cluster stopped: ratio"
        f" {envio / envio_nada:.2f}x",
    )
    falhos = sum(1 for t in relatorios_t if t["status"] != "pronto")
    vazao, cpu = _imprimir("B3 report jobs", relatorios_t, f"{falhos} failed", uso)
    vazao_nada, cpu_nada = _imprimir("B3 bare django-q2", nadas, "no-op", uso_nada)
    linha(
        "B3 ratio",
        f"bare/report execution throughput {vazao_nada / vazao:.2f}x (target <= 1.3x);"
        f" report/bare CPU per job {cpu / cpu_nada:.2f}x",
    )
    _voltas_de_um_job(tenant_id, pedidos[0])


def _drenar(
    ctx: Contexto,
    nome: str,
    extras: dict[str, str],
    contar: Any,
    n: int,
    descricao: str,
) -> dict[str, float]:
    """Starts a cluster on the full queue, waits until `n` are done, stops it.

    Returns the CPU use over the wait, and its length (`janela_s`).
    """
    # The machinery as the seed designed it: every chunk computed. The chunk
    # store (jobs.reuso) is B11's subject, off against on.
    cluster = iniciar_cluster(
        nome, Q_SAVE_LIMIT="0", RELATORIOS_REUSO_PARTES="false", **extras
    )
    medidor = MedidorCpu(
        {"qcluster": cluster.pids, "postgres": lambda: pids_do_banco(ctx.banco)},
        detalhar=frozenset(),
    )
    try:
        perfil = Perfil(cluster.pid, nome) if ctx.perfil else None
        medidor.iniciar()
        inicio = time.monotonic()
        _esperar(contar, n, descricao, timeout=60 + n)
        uso = medidor.parar()
        uso["janela_s"] = time.monotonic() - inicio
        if perfil is not None:
            perfil.parar()
    finally:
        cluster.parar()
    return uso


def _voltas_de_um_job(tenant_id: int, pedido: dict[str, Any]) -> None:
    """The worker's side of one small job, traced on the wire (see B2).

    The job runs here through the worker's entry point (tasks.py), without
    the cluster around it: what a report job adds to django-q2's own
    dequeue (pusher) and result save and acknowledgement (monitor). The
    second job of the process is traced, as a worker's steady state (B2
    traces the third request): the first also prepares the finish's
    statement (`ciclo.concluir`), one more round trip once per
    connection.
    """
    from django.db import connection
    from django_q.models import OrmQ

    from bench.b2_consultas import categoria, rastrear, resumo
    from relatorios import tasks
    from relatorios.jobs import pedidos

    jobs = [
        pedidos.submeter(
            tenant_id=tenant_id,
            tipo="vendas",
            params_brutos={**pedido, "inicio": dia, "fim": dia},
            usuario_id=None,
        ).job
        for dia in ("2024-06-01", "2024-06-02")
    ]
    OrmQ.objects.all().delete()  # no cluster: this process is the worker
    # A fresh connection, which `rastrear` keeps (it renews one near the end
    # of its CONN_MAX_AGE, and a new one would prepare the finish again).
    connection.close()
    tasks.executar_relatorio(jobs[0].id)

    def executar() -> int:
        tasks.executar_relatorio(jobs[1].id)
        return 0

    medida = rastrear(executar)
    contagem: dict[str, int] = {}
    for texto in medida.sentencas:
        chave = categoria(texto)
        chave = resumo(texto) if chave == "app" else chave
        contagem[chave] = contagem.get(chave, 0) + 1
    detalhe = ", ".join(f"{nome} {n}" for nome, n in contagem.items())
    linha("B3 one job's SQL", f"{medida.voltas} round trips in the worker: {detalhe}")


def _pedidos(n: int) -> list[dict[str, Any]]:
    """n distinct one-day requests (a new key each: day x grouping x store)."""
    pedidos = []
    inicio = date(2025, 1, 1)
    for i in range(n):
        dia = (inicio + timedelta(days=i % 730)).isoformat()
        variante = i // 730
        pedidos.append(
            {
                "inicio": dia,
                "fim": dia,
                "agrupar": "mes" if variante % 2 else "dia",
                "lojas": ["L001"] if variante >= 2 else [],
            }
        )
    return pedidos


def _submeter(tenant_id: int, corpos: list[dict[str, Any]]) -> float:
    from relatorios.jobs import pedidos

    inicio = time.monotonic()
    for corpo in corpos:
        if not pedidos.submeter(
            tenant_id=tenant_id, tipo="vendas", params_brutos=corpo, usuario_id=None
        ).criado:
            raise RuntimeError("B3: a request was not new")
    return time.monotonic() - inicio


def _enfileirar_nadas(n: int) -> float:
    from django_q.tasks import async_task

    inicio = time.monotonic()
    for _ in range(n):
        async_task(FUNCAO_NADA)
    return time.monotonic() - inicio


def _esperar(contar: Any, n: int, descricao: str, *, timeout: float) -> None:
    limite = time.monotonic() + timeout
    while contar() < n:
        if time.monotonic() > limite:
            raise RuntimeError(f"B3: {descricao} did not finish in {timeout:.0f}s")
        time.sleep(0.2)


def _contar_terminados(tenant_id: int) -> int:
    from relatorios.models import EstadoDoJob, RelatorioJob

    return RelatorioJob.objects.filter(
        tenant_id=tenant_id, status__in=(EstadoDoJob.PRONTO, EstadoDoJob.FALHOU)
    ).count()


def _contar_nadas() -> int:
    from django_q.models import Task

    return Task.objects.filter(func=FUNCAO_NADA).count()


def _tempos_relatorios(tenant_id: int) -> list[dict[str, Any]]:
    from relatorios.models import RelatorioJob

    return [
        {
            "enviado": j["criado_em"],
            "iniciado": j["iniciado_em"],
            "inicio": j["iniciado_em"],
            "fim": j["concluido_em"],
            "status": j["status"],
        }
        for j in RelatorioJob.objects.filter(tenant_id=tenant_id).values(
            "criado_em", "iniciado_em", "concluido_em", "status"
        )
    ]


def _tempos_nadas() -> list[dict[str, Any]]:
    from django_q.models import Task

    return [
        # A no-op starts when it stops: `stopped` is its start too.
        {
            "enviado": t["started"],
            "iniciado": t["stopped"],
            "inicio": t["stopped"],
            "fim": t["stopped"],
        }
        for t in Task.objects.filter(func=FUNCAO_NADA).values("started", "stopped")
    ]


def _imprimir(
    figura: str, tempos: list[dict[str, Any]], extra: str, uso: dict[str, float]
) -> tuple[float, float]:
    """Prints one side's line; returns its jobs/s and its CPU ms per job (the
    cluster's and PostgreSQL's over the drain: steadier than jobs/s on a host
    others are using)."""
    uso = dict(uso)
    janela_s = uso.pop("janela_s")
    primeiro = min(t["inicio"] for t in tempos)
    ultimo = max(t["fim"] for t in tempos)
    duracao = (ultimo - primeiro).total_seconds()
    vazao = len(tempos) / duracao
    cpu_ms = (
        (uso.get("qcluster", 0) + uso.get("postgres", 0)) / 100 * janela_s * 1000
    ) / len(tempos)
    esperas = sorted(
        (t["iniciado"] - t["enviado"]).total_seconds() * 1000 for t in tempos
    )
    p50 = statistics.median(esperas)
    p99 = esperas[min(len(esperas) - 1, int(0.99 * len(esperas)))]
    linha(
        figura,
        f"{len(tempos)} in {duracao:.1f}s = {vazao:.1f}/s  "
        f"(first start to last finish)  submit->start p50 {p50:.0f} ms"
        f" p99 {p99:.0f} ms  ({extra})"
        f"  | {formatar_cpu(uso)}, cpu/job {cpu_ms:.2f} ms",
    )
    nota(f"{figura}: submitted before the cluster started: submit->start is the wait")
    return vazao, cpu_ms
