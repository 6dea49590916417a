"""One run, start to end:

1. the deployment: database (private primary + replica by default), data,
   receivers, 2 web servers and 3 clusters, the schedules;
2. the plan of faults from the seed (written, with its sha256);
3. the load, calm for its first part (the reference figures), then with
   the injector carrying out the plan;
4. the end of the load: every fault undone, the drivers stopped, the
   schedules deleted; then the wait until everything is final (jobs,
   deliveries, occurrences and their deliveries), up to a bound;
5. the invariants, printed (0 is the target of each) and written to
   relatorio.json; the exit status says whether all held;
6. always, also on failure or Ctrl-C: every process stopped, the database
   dropped (or kept with --manter).
"""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
import time
import traceback
from types import FrameType

from tests.caos import falhas, relatorio
from tests.caos.amostras import Amostrador
from tests.caos.carga import EventoDeAgendamento, Motor, Soak, novo
from tests.caos.implantacao import Implantacao
from tests.caos.invariantes import Colheita, Marcos, verificar
from tests.caos.parametros import Parametros
from tests.caos.relatorio import nota

# Schedules: two per scheduled tenant, each firing every few seconds, with a
# deadline of a few seconds (some will miss it under faults: alerts).
AGENDAMENTOS_POR_TENANT = 2


def executar(p: Parametros) -> int:
    p.saida.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interromper)
    impl = Implantacao(p)
    tipos = falhas.habilitadas(replica=p.replica, sem=p.sem_falhas)
    plano = falhas.planejar(
        semente=p.semente,
        duracao_s=p.caos_s,
        intervalo_medio_s=p.intervalo_medio_s,
        tipos=tipos,
        clusters=p.clusters,
    )
    falhas.gravar_plano(plano, p.saida / "plano.jsonl")
    cabecalho = {
        "semente": p.semente,
        "duracao_s": p.duracao_s,
        "calma_s": p.calma_s,
        "replica": p.replica,
        "plano_sha256": falhas.assinatura(plano),
        "falhas_planejadas": len(plano),
        "commit": _commit(),
    }
    nota(
        f"caos: semente {p.semente}, {p.duracao_s:g} s de carga ({p.calma_s:g} s"
        f" calma), {len(plano)} falhas planejadas, plano sha256"
        f" {cabecalho['plano_sha256'][:16]}, commit {cabecalho['commit']},"
        f" saída {p.saida}"
    )
    try:
        inicio = time.monotonic()
        impl.criar_banco()
        impl.subir_receptores()
        impl.preparar_dados()
        impl.iniciar_replica()
        impl.subir_processos()
        soak = Soak(impl, p.semente)
        _agendar(soak)
        nota(
            f"implantação pronta em {time.monotonic() - inicio:.0f} s:"
            f" {len(impl.webs)} web, {len(impl.clusters)} clusters,"
            f" {'réplica' if impl.replica else 'sem réplica'},"
            f" {len(soak.agendamentos)} agendamentos"
        )
        return _rodar(p, impl, soak, plano, cabecalho)
    except KeyboardInterrupt:
        nota("interrompido")
        return 130
    except Exception:
        traceback.print_exc()
        nota("erro do harness")
        return 2
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        impl.descer()
        nota("implantação desfeita")


def _rodar(
    p: Parametros,
    impl: Implantacao,
    soak: Soak,
    plano: list[falhas.FalhaPlanejada],
    cabecalho: dict[str, object],
) -> int:
    amostrador = Amostrador(
        impl,
        int(p.ajuste("RELATORIOS_MAX_EXECUTANDO_POR_TENANT")),
        int(p.ajuste("RELATORIOS_MAX_ENTREGAS_POR_TENANT")),
    )
    injetor = falhas.Injetor(impl, plano, p.saida / "falhas.jsonl")
    motor = Motor(soak)
    amostrador.start()
    inicio = time.time()
    motor.iniciar()
    time.sleep(p.calma_s)
    inicio_caos = time.time()
    injetor.inicio = inicio_caos
    injetor.start()
    nota(f"calma: {inicio_caos - inicio:.0f} s; caos começou")
    time.sleep(max(0.0, inicio + p.duracao_s - time.time()))
    injetor.encerrar()
    motor.parar()
    fim_carga = time.time()
    _excluir_agendamentos(soak)
    nota(
        f"carga parada; {len(injetor.executadas())} falhas injetadas;"
        " esperando tudo ficar final"
    )
    final_em = _esperar_o_fim(impl, p.limite_final_s)
    fim = time.time()
    nota(
        "tudo final em "
        + (f"{final_em:.0f} s" if final_em is not None else "— limite atingido")
    )
    amostras = amostrador.parar()
    colheita = Colheita(
        p=p,
        impl=impl,
        soak=soak,
        falhas=injetor.registros,
        amostras=amostras,
        marcos=Marcos(inicio, inicio_caos, fim_carga, fim, final_em),
    )
    fases = [
        relatorio.fase(colheita, "calma", inicio, inicio_caos),
        relatorio.fase(colheita, "caos", inicio_caos, fim_carga),
    ]
    figuras = verificar(colheita)
    disparos = relatorio.disparo(colheita)
    travas = relatorio.esperas(colheita)
    erros = injetor.erros + motor.erros
    print()
    relatorio.imprimir_fases(fases)
    relatorio.imprimir_disparo(disparos)
    relatorio.imprimir_esperas(travas)
    print()
    relatorio.imprimir_falhas(injetor.registros)
    print()
    relatorio.imprimir_figuras(figuras)
    relatorio.gravar(
        p.saida / "relatorio.json",
        cabecalho={**cabecalho, "final_em_s": final_em},
        fases=fases,
        registros=injetor.registros,
        figuras=figuras,
        erros=erros,
        disparos=disparos,
        travas=travas,
        rss={
            f"{papel}:{pid}": [(round(t - inicio, 1), round(mb, 1)) for t, mb in serie]
            for (papel, pid), serie in amostras.rss.items()
        },
    )
    relatorio.gravar_fluxos(p.saida / "fluxos.jsonl", colheita.soak.fluxos)
    for erro in erros:
        nota(f"erro do harness: {erro}")
    violadas = relatorio.violadas(figuras)
    nota(
        f"{len(violadas)} invariantes violadas"
        + (f": {', '.join(f.nome for f in violadas)}" if violadas else "")
    )
    return 1 if violadas or erros else 0


def _agendar(soak: Soak) -> None:
    sorte = random.Random(f"{soak.semente}:agendamentos")
    for tenant in soak.impl.tenants:
        if not tenant.agendado:
            continue
        for _ in range(AGENDAMENTOS_POR_TENANT):
            novo(
                soak,
                tenant,
                passo_s=sorte.choice([3, 4, 5, 6]),
                prazo_s=round(sorte.uniform(3, 8), 1),
            )


def _excluir_agendamentos(soak: Soak) -> None:
    """The load ends with every schedule deleted (the window of each delete
    recorded like the drivers' own), so every firing owed is known."""
    from relatorios.agendamentos import agenda

    for agendamento in soak.agendamentos:
        if agendamento.excluido:
            continue
        inicio = time.time()
        ok = agenda.excluir(agendamento_id=agendamento.id)
        agendamento.eventos.append(
            EventoDeAgendamento("excluir", inicio, time.time(), ok)
        )
        agendamento.excluido = True


RESTANTES = """
SELECT (SELECT count(*) FROM relatorio_jobs WHERE status IN ('pendente', 'executando')),
       (SELECT count(*) FROM relatorio_entregas WHERE estado = 'pendente'),
       (SELECT count(*) FROM relatorio_ocorrencias WHERE NOT conferida),
       (SELECT count(*) FROM relatorio_ocorrencias o
          JOIN relatorio_jobs j ON j.id = o.job_id
         WHERE o.entregue_em IS NULL AND j.status = 'pronto')
"""


def _esperar_o_fim(impl: Implantacao, limite_s: float) -> float | None:
    """Seconds until nothing is left to do (no job pending or running, no
    delivery pending, every occurrence settled and, when its report is
    pronto, delivered); None if `limite_s` passed first. Says what is left
    every ten seconds."""
    inicio = time.time()
    proxima_nota = inicio + 10
    while time.time() - inicio < limite_s:
        with contextlib.suppress(Exception), impl.conectar() as conexao:
            restantes = conexao.execute(RESTANTES).fetchone()
            if restantes is not None and not any(restantes):
                return time.time() - inicio
            if restantes is not None and time.time() >= proxima_nota:
                proxima_nota += 10
                jobs, entregas, a_conferir, a_entregar = restantes
                nota(
                    f"restam {jobs} jobs, {entregas} entregas, {a_conferir}"
                    f" ocorrências a conferir, {a_entregar} a entregar"
                )
        time.sleep(1.0)
    return None


def _commit() -> str:
    saida = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return saida.stdout.strip() or "?"


def _interromper(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
