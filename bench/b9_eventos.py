"""B9 events: one events process holding 5,000 idle streams, then 1,000 job
state changes; the same watchers polling every 2 s, in the same run.

1. The events process (config/eventos.py, one granian ASGI worker) and 50
   running jobs of one tenant; 5,000 job streams, 100 per job (the job page
   of twenty managers, five times over), opened by an asyncio client in this
   process over raw sockets.
2. Idle: the process's RSS per stream (with all streams open, less with the
   first 100, over the streams in between) and its CPU over 10 s with
   nothing happening.
3. 1,000 changes: `progresso` of the 50 jobs, in rounds, 100 per second, each
   its own transaction from this process. Each change is published by the
   trigger at its commit; for every stream and event, the time from the
   UPDATE's commit returning here to the event's bytes arriving here (one
   clock). p50/p99/max over all deliveries; per stream, events lost (published
   for its job after it opened, never received) and duplicated.
4. Polling, the same watchers and changes: 5,000 clients asking the WSGI
   server (config/servidor.py as it ships) for the job's status every 2 s,
   on keep-alive connections. Per mode: database transactions per second
   (pg_stat_database; each status read is one statement in autocommit), CPU
   of the serving process(es) and of PostgreSQL, and how stale a watcher's
   view is (commit to the first poll that shows it).

5. What publishing costs the hot paths, in the same run: the submit of a
   new job and a worker's claim (B4's in-process measurement: the best of
   three rounds, synchronous_commit off) with the events' triggers, then with
   them disabled; and new submits from 4 threads at once for 5 s each way,
   synchronous_commit on (until migration 0030 the publishing's lock and
   NOTIFY made commits wait for each other: concurrency is where that shows).

QUICK: 500 streams, 100 changes.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import threading
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from bench.ambiente import (
    PYTHON,
    SAIDA,
    TICKS_POR_S,
    MedidorCpu,
    Processo,
    ambiente,
    esperar_filhos,
    filhos,
    formatar_cpu,
    iniciar_web,
    pids_do_banco,
    pids_do_grupo,
    porta_livre,
    ticks,
)
from bench.contexto import Contexto, linha, nota
from bench.preparo import criar_tenant, gerar_dados

N_JOBS = 50
RITMO = 100  # changes per second
AQUECIMENTO = 100
INTERVALO_DE_POLL_S = 2.0
_ID = re.compile(rb"^id: (\d+)$", re.M)
_TAMANHO = re.compile(rb"(?i)content-length: (\d+)")
_PROGRESSO = re.compile(rb'"progresso":(\d+)')


@dataclass
class Observador:
    job_id: int
    recebidos: list[tuple[int, float]] = field(default_factory=list)
    inicial: int | None = None
    aberto: asyncio.Event = field(default_factory=asyncio.Event)


def executar(ctx: Contexto) -> None:
    n_fluxos = 500 if ctx.rapido else 5000
    n_mudancas = 100 if ctx.rapido else 1000
    tenant_id, token = criar_tenant("Rede Eventos", "eventos")
    jobs = _criar_jobs(ctx, tenant_id)
    porta = porta_livre()
    eventos = Processo(
        "eventos",
        [PYTHON, "-m", "config.eventos"],
        ambiente(
            EVENTOS_BIND=f"127.0.0.1:{porta}",
            RELATORIOS_EVENTOS_MAX_POR_TOKEN=str(n_fluxos + 100),
            RELATORIOS_EVENTOS_MAX_POR_PROCESSO=str(n_fluxos + 100),
        ),
        SAIDA / "b9-eventos.log",
    )
    esperar_filhos(eventos, 1)
    _esperar_porta(porta, eventos)
    worker = filhos(eventos.pid)[0]
    observadores = [Observador(job_id=jobs[i % len(jobs)]) for i in range(n_fluxos)]
    laco = asyncio.new_event_loop()
    threading.Thread(target=laco.run_forever, daemon=True).start()
    # The first streams also pay for what any first request loads (modules,
    # caches): the figure is the cost of each stream after them.
    aquecimento = observadores[:AQUECIMENTO]
    asyncio.run_coroutine_threadsafe(
        _abrir_todos(porta, token, aquecimento), laco
    ).result(timeout=600)
    time.sleep(2)
    rss_antes = _rss_kb(worker)
    inicio = time.monotonic()
    asyncio.run_coroutine_threadsafe(
        _abrir_todos(porta, token, observadores[AQUECIMENTO:]), laco
    ).result(timeout=600)
    nota(f"B9: {n_fluxos} streams open in {time.monotonic() - inicio:.1f}s")
    time.sleep(3)
    rss_depois = _rss_kb(worker)
    ocioso = MedidorCpu(
        {"eventos": lambda: pids_do_grupo(eventos.pid)}, detalhar=frozenset()
    )
    ocioso.iniciar()
    time.sleep(10)
    uso_ocioso = ocioso.parar()
    por_fluxo = (rss_depois - rss_antes) / (n_fluxos - AQUECIMENTO)
    linha(
        "B9 streams idle",
        f"{n_fluxos} streams: RSS {rss_antes / 1024:.0f} MB with {AQUECIMENTO},"
        f" {rss_depois / 1024:.0f} MB with all,"
        f" {por_fluxo:.1f} KB per stream (target <= 40 KB); idle CPU"
        f" {uso_ocioso['eventos']:.1f}% of a core over 10 s",
    )

    medidor = _medidor(ctx, {"eventos": lambda: pids_do_grupo(eventos.pid)})
    xacts0, t0 = _transacoes(ctx), time.monotonic()
    commits, duracao = _mudar(ctx, jobs, n_mudancas, base=1)
    publicados = _publicados(ctx, jobs)
    # Until every stream has every event of its job (or 60 s: then counted
    # as lost).
    esperado = _esperados(observadores, publicados)
    limite = time.monotonic() + 60
    while (
        sum(len(o.recebidos) for o in observadores) < esperado
        and time.monotonic() < limite
    ):
        time.sleep(0.1)
    xacts = (_transacoes(ctx) - xacts0) / (time.monotonic() - t0)
    uso = medidor.parar()
    laco.call_soon_threadsafe(laco.stop)
    latencias, perdidos, duplicados = _contar(observadores, commits, publicados)
    eventos.parar()
    latencias.sort()
    linha(
        "B9 streams changes",
        f"{n_mudancas} changes x {n_fluxos // N_JOBS} watchers = {len(latencias):,}"
        f" deliveries: commit->client p50 {_ms(latencias, 0.5)} p99"
        f" {_ms(latencias, 0.99)} max {_ms(latencias, 1.0)} ms (target p99 <= 100);"
        f" lost {perdidos}, duplicated {duplicados} (target 0, per stream)",
    )
    linha(
        "B9 streams load",
        f"db {xacts:.0f} xact/s | {formatar_cpu(uso)}",
    )

    web, url = iniciar_web("b9")
    porta_web = int(url.rsplit(":", 1)[1])
    laco = asyncio.new_event_loop()
    threading.Thread(target=laco.run_forever, daemon=True).start()
    polls: list[tuple[int, list[tuple[float, int]]]] = [
        (obs.job_id, []) for obs in observadores
    ]
    parar = threading.Event()
    consultas = asyncio.run_coroutine_threadsafe(
        _consultar_todos(porta_web, token, polls, parar), laco
    )
    time.sleep(INTERVALO_DE_POLL_S + 1)  # every poller in its rhythm
    xacts0 = _transacoes(ctx)
    medidor = _medidor(ctx, {"web": lambda: pids_do_grupo(web.pid)})
    commits, duracao = _mudar(ctx, jobs, n_mudancas, base=1 + n_mudancas // N_JOBS)
    time.sleep(INTERVALO_DE_POLL_S + 1)
    xacts = (_transacoes(ctx) - xacts0) / (duracao + INTERVALO_DE_POLL_S + 1)
    uso = medidor.parar()
    parar.set()
    feitas = consultas.result(timeout=120)
    laco.call_soon_threadsafe(laco.stop)
    web.parar()
    atrasos = _atrasos(polls, commits)
    linha(
        "B9 polling",
        f"{n_fluxos} watchers every {INTERVALO_DE_POLL_S:.0f} s: {feitas:,} polls"
        f" ({feitas / (duracao + INTERVALO_DE_POLL_S + 1):.0f}/s)"
        f" | db {xacts:.0f} xact/s"
        f" | {formatar_cpu(uso)} | commit->first poll that shows it: p50"
        f" {_ms(atrasos, 0.5)} p99 {_ms(atrasos, 0.99)} ms (per watcher and change)",
    )
    _custo_de_publicar(ctx)


# --- what publishing costs ----------------------------------------------------


def _custo_de_publicar(ctx: Contexto) -> None:
    from bench.b4_historico import _usuario

    tenant_id, _ = criar_tenant("Rede Publicacao", "publicacao")
    gerar_dados(tenant_id, lojas=10, vendas=100, produtos=5, seed=4)
    usuario_id = _usuario(tenant_id)
    n = 300 if ctx.rapido else 1000
    # Rounds alternate with and without, so the machine's neighbours weigh
    # on both alike; per mode and operation the least disturbed round counts.
    medidas: dict[bool, list[dict[str, tuple[float, float]]]] = {True: [], False: []}
    try:
        for rodada in range(3):
            for ligados in (True, False):
                _gatilhos(ctx, ligados=ligados)
                medidas[ligados].append(
                    _medir_publicacao(
                        tenant_id, usuario_id, n, serie=2 * rodada + ligados
                    )
                )
    finally:
        _gatilhos(ctx, ligados=True)
    for operacao in ("new submit", "claim"):
        com = min(m[operacao] for m in medidas[True])
        sem = min(m[operacao] for m in medidas[False])
        linha(
            f"B9 publish {operacao}",
            f"PostgreSQL CPU per call {sem[0]:.3f} ms without the events'"
            f" triggers, {com[0]:.3f} ms with them (+{com[0] - sem[0]:.3f} ms);"
            f" median wall {sem[1]:.3f} -> {com[1]:.3f} ms",
        )
    _gatilhos(ctx, ligados=False)
    try:
        vazao_sem = _vazao(tenant_id, usuario_id, serie=50)
    finally:
        _gatilhos(ctx, ligados=True)
    vazao_com = _vazao(tenant_id, usuario_id, serie=60)
    linha(
        "B9 publish concurrent",
        f"new submits, 4 threads: {vazao_sem:.0f}/s without the triggers,"
        f" {vazao_com:.0f}/s with them ({vazao_com / vazao_sem:.2f}x)",
    )


def _medir_publicacao(
    tenant_id: int, usuario_id: int, n: int, *, serie: int
) -> dict[str, tuple[float, float]]:
    """n new submits, then a claim of each: per operation, the CPU its
    PostgreSQL backend spent per call (from /proc: what a trigger adds runs
    there) and the median wall time, synchronous_commit off (as B4)."""
    from django.db import connection
    from django_q.models import OrmQ

    from bench.b4_historico import SQL_ENCERRAR_RESTOS
    from relatorios.jobs import ciclo, pedidos

    with connection.cursor() as cursor:
        cursor.execute(SQL_ENCERRAR_RESTOS)
        cursor.execute("SET synchronous_commit = off")
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    ids: list[int] = []

    def submeter(i: int) -> None:
        dia = date(2040 + serie, 1, 1) + timedelta(days=i % 360)
        ids.append(
            pedidos.submeter(
                tenant_id=tenant_id,
                tipo="vendas",
                params_brutos={
                    "inicio": dia.isoformat(),
                    "fim": dia.isoformat(),
                    "lojas": [f"L{1 + (i // 360) % 10:03d}"],
                },
                usuario_id=usuario_id,
            ).job.id
        )

    medidas = {}
    for nome, fazer in (
        ("new submit", submeter),
        ("claim", lambda i: ciclo.reivindicar(job_id=ids[i])),
    ):
        paredes = []
        cpu0 = ticks(backend)
        for i in range(n):
            inicio = time.perf_counter()
            fazer(i)
            paredes.append(1000 * (time.perf_counter() - inicio))
        cpu = 1000 * (ticks(backend) - cpu0) / TICKS_POR_S / n
        medidas[nome] = (cpu, statistics.median(paredes))
    OrmQ.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute("RESET synchronous_commit")
    return medidas


def _gatilhos(ctx: Contexto, *, ligados: bool) -> None:
    acao = "ENABLE" if ligados else "DISABLE"
    with ctx.banco.conectar() as conexao:
        conexao.execute(f"ALTER TABLE relatorio_jobs {acao} TRIGGER USER")


def _vazao(tenant_id: int, usuario_id: int, *, serie: int) -> float:
    """New submits per second from 4 threads for 5 s (each its own connection)."""
    from django.db import connection
    from django_q.models import OrmQ

    from relatorios.jobs import pedidos

    feitos = [0] * 4
    fim = time.monotonic() + 5

    def submeter(fio: int) -> None:
        i = 0
        while time.monotonic() < fim:
            dia = date(2100 + serie + fio, 1, 1) + timedelta(days=i % 360)
            pedidos.submeter(
                tenant_id=tenant_id,
                tipo="vendas",
                params_brutos={
                    "inicio": dia.isoformat(),
                    "fim": dia.isoformat(),
                    "lojas": [f"L{1 + (i // 360) % 10:03d}"],
                },
                usuario_id=usuario_id,
            )
            i += 1
            feitos[fio] = i
        connection.close()

    fios = [threading.Thread(target=submeter, args=(f,)) for f in range(4)]
    for fio in fios:
        fio.start()
    for fio in fios:
        fio.join()
    OrmQ.objects.all().delete()  # no cluster runs these
    return sum(feitos) / 5


# --- set-up --------------------------------------------------------------------


def _criar_jobs(ctx: Contexto, tenant_id: int) -> list[int]:
    with ctx.banco.conectar() as conexao:
        linhas = conexao.execute(
            """
            INSERT INTO relatorio_jobs (chave, tenant_id, tipo, params, status,
                                        tentativas, iniciado_em, heartbeat_em)
            SELECT 'b9-' || i, %s, 'vendas', '{}'::jsonb, 'executando', 1, now(), now()
              FROM generate_series(1, %s) AS i
            RETURNING id
            """,
            [tenant_id, N_JOBS],
        ).fetchall()
    return [int(i) for (i,) in linhas]


def _esperar_porta(porta: int, processo: Processo) -> None:
    import socket

    limite = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", porta), timeout=1):
                return
        except OSError:
            if not processo.vivo() or time.monotonic() > limite:
                raise RuntimeError(
                    f"the events process did not start:\n{processo.texto_do_log()}"
                ) from None
            time.sleep(0.1)


def _rss_kb(pid: int) -> int:
    for texto in Path(f"/proc/{pid}/status").read_text().splitlines():
        if texto.startswith("VmRSS:"):
            return int(texto.split()[1])
    return 0


def _medidor(ctx: Contexto, grupos: dict[str, object]) -> MedidorCpu:
    medidor = MedidorCpu(
        {**grupos, "postgres": lambda: pids_do_banco(ctx.banco)},  # type: ignore[dict-item]
        detalhar=frozenset(),
    )
    medidor.iniciar()
    return medidor


def _transacoes(ctx: Contexto) -> int:
    with ctx.banco.conectar() as conexao:
        linha_ = conexao.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    return int(linha_[0]) if linha_ else 0


# --- the changes ---------------------------------------------------------------


def _mudar(
    ctx: Contexto, jobs: list[int], n: int, *, base: int
) -> tuple[dict[tuple[int, int], float], float]:
    """n progress changes over the jobs, RITMO a second; (job, progress) ->
    the monotonic instant its commit returned."""
    commits: dict[tuple[int, int], float] = {}
    inicio = time.monotonic()
    with ctx.banco.conectar() as conexao:
        conexao.autocommit = True
        for i in range(n):
            job_id = jobs[i % len(jobs)]
            progresso = base + i // len(jobs)
            alvo = inicio + i / RITMO
            espera = alvo - time.monotonic()
            if espera > 0:
                time.sleep(espera)
            conexao.execute(
                "UPDATE relatorio_jobs SET progresso = %s WHERE id = %s",
                [progresso, job_id],
            )
            commits[(job_id, progresso)] = time.monotonic()
    return commits, time.monotonic() - inicio


def _publicados(ctx: Contexto, jobs: list[int]) -> dict[int, tuple[int, int]]:
    """event id -> (job, progress), for every event of the jobs."""
    with ctx.banco.conectar() as conexao:
        linhas = conexao.execute(
            "SELECT id, job_id, (dados->>'progresso')::int FROM relatorio_eventos"
            " WHERE job_id = ANY(%s)",
            [jobs],
        ).fetchall()
    return {int(i): (int(j), int(p)) for i, j, p in linhas}


def _esperados(
    observadores: list[Observador], publicados: dict[int, tuple[int, int]]
) -> int:
    por_job: dict[int, list[int]] = {}
    for evento_id, (job_id, _) in publicados.items():
        por_job.setdefault(job_id, []).append(evento_id)
    return sum(
        sum(1 for i in por_job.get(o.job_id, []) if i > (o.inicial or 0))
        for o in observadores
    )


def _contar(
    observadores: list[Observador],
    commits: dict[tuple[int, int], float],
    publicados: dict[int, tuple[int, int]],
) -> tuple[list[float], int, int]:
    latencias: list[float] = []
    perdidos = duplicados = 0
    por_job: dict[int, set[int]] = {}
    for evento_id, (job_id, _) in publicados.items():
        por_job.setdefault(job_id, set()).add(evento_id)
    for obs in observadores:
        recebidos = [i for i, _ in obs.recebidos]
        duplicados += len(recebidos) - len(set(recebidos))
        esperados = {
            i for i in por_job.get(obs.job_id, set()) if i > (obs.inicial or 0)
        }
        perdidos += len(esperados - set(recebidos))
        for evento_id, quando in obs.recebidos:
            chave = publicados.get(evento_id)
            if chave in commits:
                latencias.append(quando - commits[chave])
    return latencias, perdidos, duplicados


def _atrasos(
    polls: list[tuple[int, list[tuple[float, int]]]],
    commits: dict[tuple[int, int], float],
) -> list[float]:
    """For each watcher and change of its job: from the commit to the
    watcher's first poll that shows that progress or a later one."""
    por_job: dict[int, list[tuple[int, float]]] = {}
    for (job_id, progresso), instante in commits.items():
        por_job.setdefault(job_id, []).append((progresso, instante))
    atrasos: list[float] = []
    for job_id, lista in polls:
        for progresso, instante in por_job.get(job_id, []):
            for quando, visto in lista:
                if quando >= instante and visto >= progresso:
                    atrasos.append(quando - instante)
                    break
    return atrasos


def _ms(valores: list[float], q: float) -> str:
    if not valores:
        return "-"
    i = min(len(valores) - 1, int(q * len(valores)))
    return f"{1000 * sorted(valores)[i]:.0f}" if q < 1 else f"{1000 * max(valores):.0f}"


# --- the clients ---------------------------------------------------------------


_LEITORES: list[asyncio.Future[None]] = []


async def _abrir_todos(porta: int, token: str, observadores: list[Observador]) -> None:
    for i in range(0, len(observadores), 100):
        lote = observadores[i : i + 100]
        for obs in lote:
            _LEITORES.append(asyncio.ensure_future(_ouvir(porta, token, obs)))
        await asyncio.wait_for(
            asyncio.gather(*(obs.aberto.wait() for obs in lote)), timeout=120
        )


async def _ouvir(porta: int, token: str, obs: Observador) -> None:
    leitor, escritor = await asyncio.open_connection("127.0.0.1", porta, limit=2**20)
    escritor.write(
        f"GET /relatorios/jobs/{obs.job_id}/eventos HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Token {token}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    cabecalho = await leitor.readuntil(b"\r\n\r\n")
    if not cabecalho.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(cabecalho.decode(errors="replace"))
    # The body is chunked; the chunk-size lines never look like an `id:`
    # line, so the raw bytes are scanned as they come, line by line.
    resto = b""
    while True:
        dados = await leitor.read(65536)
        if not dados:
            return
        agora = time.monotonic()
        dados = resto + dados
        corte = dados.rfind(b"\n") + 1
        resto = dados[corte:]
        for achado in _ID.finditer(dados, 0, corte):
            evento_id = int(achado.group(1))
            if obs.inicial is None:
                obs.inicial = evento_id
                obs.aberto.set()
            else:
                obs.recebidos.append((evento_id, agora))


async def _consultar_todos(
    porta: int,
    token: str,
    polls: list[tuple[int, list[tuple[float, int]]]],
    parar: threading.Event,
) -> int:
    contagem = [0]
    tarefas = [
        asyncio.ensure_future(
            _consultar(porta, token, job_id, i / len(polls), lista, parar, contagem)
        )
        for i, (job_id, lista) in enumerate(polls)
    ]
    await asyncio.gather(*tarefas, return_exceptions=True)
    return contagem[0]


async def _consultar(
    porta: int,
    token: str,
    job_id: int,
    fase: float,
    lista: list[tuple[float, int]],
    parar: threading.Event,
    contagem: list[int],
) -> None:
    await asyncio.sleep(INTERVALO_DE_POLL_S * fase)  # spread over the interval
    leitor, escritor = await asyncio.open_connection("127.0.0.1", porta)
    pedido = (
        f"GET /relatorios/jobs/{job_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Token {token}\r\nAccept: application/json\r\n\r\n"
    ).encode()
    proximo = time.monotonic()
    while not parar.is_set():
        escritor.write(pedido)
        cabecalho = await leitor.readuntil(b"\r\n\r\n")
        tamanho = _TAMANHO.search(cabecalho)
        corpo = await leitor.readexactly(int(tamanho.group(1)) if tamanho else 0)
        contagem[0] += 1
        achado = _PROGRESSO.search(corpo)
        if achado:
            lista.append((time.monotonic(), int(achado.group(1))))
        proximo += INTERVALO_DE_POLL_S
        await asyncio.sleep(max(0.0, proximo - time.monotonic()))
    escritor.close()
