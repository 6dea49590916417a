"""B3 pipeline: what the job machinery adds on top of django-q2 itself.

One real qcluster (production settings) serves two bursts, one after the other:
1. N small report jobs, each submitted with `POST /relatorios/vendas` to a real
   gunicorn (one store-day of a small tenant: one chunk, trivial SQL), from
   submit to `pronto`;
2. N bare `async_task`s of a no-op function, enqueued from this process.

jobs/s is N / (last finish - first submit); submit -> start is
`iniciado_em - criado_em` for the reports (both stamped by PostgreSQL) and
`stopped - started` for the no-op tasks (django-q2 stamps `started` when it
enqueues; a no-op starts and stops at once). Successful task records are kept
(Q_SAVE_LIMIT=0) in both runs so that every no-op task has its timestamps;
the monitor's pruning of a 100-record history is then skipped for both.
The tenant's pending and in-flight caps are lifted: with them, one tenant's
tiny jobs are dispatched two per queue poll (the fairness policy, not the
machinery's cost).
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from typing import Any

from bench.ambiente import (
    MedidorCpu,
    Perfil,
    formatar_cpu,
    iniciar_cluster,
    iniciar_gunicorn,
    pedir_vendas,
    pids_do_banco,
)
from bench.contexto import Contexto, linha, nota
from bench.preparo import criar_tenant, gerar_dados

SEM_LIMITE = str(10**9)
FUNCAO_NADA = "bench.tarefas.nada"


def executar(ctx: Contexto) -> None:
    n = 200 if ctx.rapido else 2000
    tenant_id, token = criar_tenant("Rede Pipeline", "pipeline")
    gerar_dados(tenant_id, lojas=4, vendas=5000, produtos=20, seed=3)
    pedidos = _pedidos(n)
    # One tenant's burst: its caps (20 pending, 2 in flight) lifted, or the
    # figure would measure the fairness policy (two jobs per queue poll of
    # this tenant) rather than the machinery.
    sem_limites = {
        "RELATORIOS_MAX_PENDENTES_POR_TENANT": SEM_LIMITE,
        "RELATORIOS_MAX_EXECUTANDO_POR_TENANT": SEM_LIMITE,
    }
    cluster = iniciar_cluster("b3", Q_SAVE_LIMIT="0", **sem_limites)
    gunicorn, url = iniciar_gunicorn("b3", **sem_limites)
    medidor = MedidorCpu(
        {
            "qcluster": cluster.pids,
            "gunicorn": gunicorn.pids,
            "postgres": lambda: pids_do_banco(ctx.banco),
        },
        detalhar=frozenset(),
    )
    try:
        perfil = Perfil(cluster.pid, "b3-relatorios") if ctx.perfil else None
        medidor.iniciar()
        envio = _submeter(url, token, pedidos)
        _esperar(
            lambda: _contar_terminados(tenant_id), n, "report jobs", timeout=60 + n
        )
        uso = medidor.parar()
        if perfil is not None:
            perfil.parar()
        relatorios = _tempos_relatorios(tenant_id)
        gunicorn.parar()  # the baseline has no HTTP side

        medidor.grupos.pop("gunicorn")
        perfil = Perfil(cluster.pid, "b3-nada") if ctx.perfil else None
        medidor.iniciar()
        envio_nada = _enfileirar_nadas(n)
        _esperar(_contar_nadas, n, "no-op tasks", timeout=60 + n)
        uso_nada = medidor.parar()
        if perfil is not None:
            perfil.parar()
        nadas = _tempos_nadas()
    finally:
        gunicorn.parar()
        cluster.parar()

    falhos = sum(1 for t in relatorios if t["status"] != "pronto")
    vazao = _imprimir(
        "B3 report jobs",
        relatorios,
        f"submitted in {envio:.1f}s over HTTP, {falhos} failed",
        uso,
    )
    vazao_nada = _imprimir(
        "B3 bare django-q2",
        nadas,
        f"enqueued in {envio_nada:.1f}s in-process",
        uso_nada,
    )
    linha(
        "B3 ratio",
        f"bare/report throughput {vazao_nada / vazao:.2f}x (target <= 1.2x)",
    )
    _voltas_de_um_job(tenant_id, pedidos[0])


def _voltas_de_um_job(tenant_id: int, pedido: dict[str, Any]) -> None:
    """The worker's side of one small job, traced on the wire (see B2).

    The job runs here through the worker's entry point (tasks.py), without
    the cluster around it: what a report job adds to django-q2's own
    dequeue (pusher) and result save and acknowledgement (monitor).
    """
    from django_q.models import OrmQ

    from bench.b2_consultas import categoria, rastrear, resumo
    from relatorios import services, tasks

    pedido = {**pedido, "inicio": "2024-06-01", "fim": "2024-06-01"}
    job = services.submeter(
        tenant_id=tenant_id, tipo="vendas", params_brutos=pedido, usuario_id=None
    ).job
    OrmQ.objects.all().delete()  # no cluster: this process is the worker

    def executar() -> int:
        tasks.executar_relatorio(job.id)
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


def _submeter(url: str, token: str, pedidos: list[dict[str, Any]]) -> float:
    def enviar(corpo: dict[str, Any]) -> int:
        return pedir_vendas(url, token, corpo, timeout=60)[0]

    inicio = time.monotonic()
    with ThreadPoolExecutor(4) as executor:
        codigos = list(executor.map(enviar, pedidos))
    if set(codigos) != {202}:
        raise RuntimeError(f"B3: unexpected statuses {sorted(set(codigos))}")
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
    from relatorios.models import RelatorioJob, Status

    return RelatorioJob.objects.filter(
        tenant_id=tenant_id, status__in=(Status.PRONTO, Status.FALHOU)
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
        {"enviado": t["started"], "iniciado": t["stopped"], "fim": t["stopped"]}
        for t in Task.objects.filter(func=FUNCAO_NADA).values("started", "stopped")
    ]


def _imprimir(
    figura: str, tempos: list[dict[str, Any]], extra: str, uso: dict[str, float]
) -> float:
    primeiro = min(t["enviado"] for t in tempos)
    ultimo = max(t["fim"] for t in tempos)
    duracao = (ultimo - primeiro).total_seconds()
    vazao = len(tempos) / duracao
    esperas = sorted(
        (t["iniciado"] - t["enviado"]).total_seconds() * 1000 for t in tempos
    )
    p50 = statistics.median(esperas)
    p99 = esperas[min(len(esperas) - 1, int(0.99 * len(esperas)))]
    linha(
        figura,
        f"{len(tempos)} in {duracao:.1f}s = {vazao:.1f}/s  "
        f"submit->start p50 {p50:.0f} ms p99 {p99:.0f} ms  ({extra})"
        f"  | {formatar_cpu(uso)}",
    )
    nota(f"{figura}: the burst queues, so submit->start is mostly waiting in line")
    return vazao
