"""The fault injector: a plan drawn from the seed, then carried out and logged.

The plan is a pure function of the seed, the length of the faulty phase,
the mean interval and the fault kinds enabled: the same seed gives the same
plan (`planejar`, tested), written to `plano.jsonl` with its sha256. Each
planned fault names its target abstractly (a cluster's index, a number in
[0, 1) that picks one of the live candidates when it runs), so a replay hits
the same roles at the same offsets; which pid that is, and what it was doing,
is the live system's (the log, `falhas.jsonl`, says).

Every kind is one `TipoDeFalha` in `FALHAS`: a weight, how long it lasts,
and what it does. `iniciar` returns what it hit and how to undo it (SIGCONT,
the receiver back, the cluster restarted); the executor undoes each when its
time is up, and everything still undone when the faulty phase ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tests import processos
from tests.caos.implantacao import HARNESS, Implantacao, pids_da_instancia
from tests.caos.parametros import PREFIXO_DA_RAZAO as PREFIXO

# Restarts under way, and waits for a fault's effect to end (joined before
# the drain).
REINICIOS: list[threading.Thread] = []
# How long a killed cluster takes to start again, on a loaded host (the
# planner keeps other cluster faults off it meanwhile).
REINICIO_S = 15.0
# How long a worker fault waits for a worker in the middle of a chunk.
ESPERA_POR_PARTE_S = 3.0
# A web worker younger than this is never killed (granian's crash-loop rule).
IDADE_MINIMA_WEB_S = 8.0
# How long after a fault on a web server its 5xx (and requests without an
# answer) are the fault's: a killed worker's queued connections are reset (its
# window lasts until its replacement serves, and this long after), a frozen
# one's answered after SIGCONT, a request whose backend was terminated fails
# at once.
JANELA_WEB_S = 3.0


@dataclass(frozen=True)
class FalhaPlanejada:
    n: int
    em_s: float  # from the start of the faulty phase
    tipo: str
    duracao_s: float
    alvo: int  # an index: which cluster or web server
    sorte: float  # picks among the live candidates
    quantos: int


@dataclass
class Efeito:
    """What a fault hit, and how to undo it when its time is up."""

    pids: list[int] = field(default_factory=list)
    detalhe: str = ""
    # The web servers (index) whose errors this fault excuses, until when.
    webs: list[int] = field(default_factory=list)
    desfazer: Callable[[], str] | None = None
    # For a fault whose effect outlasts it (a killed worker until its
    # replacement serves): waits for that, returns when (in a thread).
    ate_quando: Callable[[], float] | None = None
    pulada: str = ""


@dataclass(frozen=True)
class TipoDeFalha:
    nome: str
    peso: float
    # (min, max) of its duration in seconds; (0, 0): instantaneous.
    duracao: tuple[float, float]
    iniciar: Callable[[Implantacao, FalhaPlanejada], Efeito]
    ocupa: str = ""

    @property
    def so_com_replica(self) -> bool:
        return self.ocupa == "replica"

    def chaves(self, falha: FalhaPlanejada, clusters: int) -> list[str]:
        if self.ocupa == "cluster":
            return [f"cluster-{falha.alvo % clusters + 1}"]
        if self.ocupa == "clusters":
            return [f"cluster-{i}" for i in range(1, clusters + 1)]
        return [self.ocupa] if self.ocupa else []


@dataclass
class Registro:
    """One fault as it ran (falhas.jsonl)."""

    n: int
    tipo: str
    planejada_s: float
    inicio: float
    fim: float
    pids: list[int]
    detalhe: str
    webs: list[int]
    pulada: str = ""
    desfeita: str = ""


# --- the kinds ---------------------------------------------------------------------


def _escolher(candidatos: list[int], sorte: float) -> int | None:
    candidatos = sorted(candidatos)
    return candidatos[int(sorte * len(candidatos))] if candidatos else None


def _sinalizar(pids: list[int], sinal: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sinal)


def _continuar(pids: list[int]) -> Callable[[], str]:
    def desfazer() -> str:
        _sinalizar(pids, signal.SIGCONT)
        return "SIGCONT"

    return desfazer


def _worker_do_cluster(impl: Implantacao, f: FalhaPlanejada) -> tuple[int | None, str]:
    """A worker of the cluster in the middle of a ledger chunk (it holds the
    job's lock: frozen past its lease, it is a zombie the ledger sees),
    waited for up to ESPERA_POR_PARTE_S; else one running any job (an open
    attempt); else any process the cluster's sentinel forked."""
    cluster = impl.clusters[f.alvo % len(impl.clusters)]
    limite = time.time() + ESPERA_POR_PARTE_S
    with impl.conectar() as conexao:
        while True:
            pids = impl.pids_do_cluster(cluster)
            if len(pids) < 3:
                return None, f"cluster {cluster.indice} fora do ar"
            # pids[0] is the cluster's main process, pids[1] its sentinel.
            na_razao = [
                pid
                for (pid,) in conexao.execute(
                    "SELECT pid FROM caos_razao WHERE fim IS NULL"
                    " AND inicio > now() - interval '1 minute' AND pid = ANY(%s)",
                    [pids[2:]],
                ).fetchall()
            ]
            if na_razao:
                return _escolher(
                    na_razao, f.sorte
                ), f"cluster {cluster.indice}, numa parte"
            if time.time() > limite:
                break
            time.sleep(0.05)
        ocupados = [
            int(pid)
            for (pid,) in conexao.execute(
                "SELECT split_part(trabalhador, ':', 2) FROM relatorio_tentativas"
                " WHERE terminado_em IS NULL AND trabalhador LIKE '%:%'"
            ).fetchall()
            if pid.isdigit() and int(pid) in pids[2:]
        ]
    if ocupados:
        return _escolher(ocupados, f.sorte), f"cluster {cluster.indice}, com job"
    return _escolher(pids[2:], f.sorte), f"cluster {cluster.indice}, ocioso"


def matar_worker_do_cluster(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    pid, detalhe = _worker_do_cluster(impl, f)
    if pid is None:
        return Efeito(pulada=detalhe)
    _sinalizar([pid], signal.SIGKILL)
    return Efeito(pids=[pid], detalhe=detalhe)


def congelar_worker_do_cluster(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    pid, detalhe = _worker_do_cluster(impl, f)
    if pid is None:
        return Efeito(pulada=detalhe)
    _sinalizar([pid], signal.SIGSTOP)
    return Efeito(pids=[pid], detalhe=detalhe, desfazer=_continuar([pid]))


def matar_cluster(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    cluster = impl.clusters[f.alvo % len(impl.clusters)]
    if cluster.derrubado or cluster.processo is None:
        return Efeito(pulada=f"cluster {cluster.indice} já fora do ar")
    pids = impl.derrubar_cluster(cluster)

    def reiniciar() -> str:
        # In a thread of its own: a cluster takes seconds to start, and the
        # plan's next faults must not wait for it.
        fio = threading.Thread(target=impl.reiniciar_cluster, args=(cluster,))
        fio.start()
        REINICIOS.append(fio)
        return "reiniciando"

    return Efeito(
        pids=pids, detalhe=f"cluster {cluster.indice} inteiro", desfazer=reiniciar
    )


def congelar_cluster(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    cluster = impl.clusters[f.alvo % len(impl.clusters)]
    pids = impl.pids_do_cluster(cluster)
    if not pids:
        return Efeito(pulada=f"cluster {cluster.indice} fora do ar")
    _sinalizar(pids, signal.SIGSTOP)
    return Efeito(
        pids=pids,
        detalhe=f"cluster {cluster.indice} inteiro",
        desfazer=_continuar(pids),
    )


def atrasar_agendadores(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    """Every cluster's main process (its supervisor: scheduler, checker,
    sweeps, beat) frozen for longer than the firing tolerance: each firing
    due meanwhile is found late, as after a jump of the scheduler's clock.

    A real clock jump is not done: the scheduler reads PostgreSQL's clock
    (`agora_do_banco`), and the server's clock is the host's, shared.
    """
    pids = [
        c.processo.pid
        for c in impl.clusters
        if c.processo is not None and c.processo.vivo()
    ]
    if not pids:
        return Efeito(pulada="nenhum cluster no ar")
    _sinalizar(pids, signal.SIGSTOP)
    return Efeito(
        pids=pids,
        detalhe="supervisores de todos os clusters",
        desfazer=_continuar(pids),
    )


def matar_worker_da_web(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    """kill -9 of a web worker; its window lasts until granian's replacement
    serves (on a loaded host its import takes 10-15 s, and a server whose
    other worker dies meanwhile listens on nothing: refused connections)."""
    web = impl.webs[f.alvo % len(impl.webs)]
    antes = set(processos.filhos(web.processo.pid))
    pid = _escolher(
        impl.workers_da_web(web, idade_minima_s=IDADE_MINIMA_WEB_S), f.sorte
    )
    if pid is None:
        return Efeito(pulada=f"web {web.indice}: nenhum worker com mais de 8 s")
    _sinalizar([pid], signal.SIGKILL)

    def substituto_servindo() -> float:
        limite = time.time() + 90
        while time.time() < limite and web.processo.vivo():
            novos = set(processos.filhos(web.processo.pid)) - antes
            texto = web.processo.texto_do_log()
            if any(f"pid={novo} Started worker" in texto for novo in novos):
                break
            time.sleep(0.2)
        return time.time()

    return Efeito(
        pids=[pid],
        detalhe=f"web {web.indice}",
        webs=[web.indice],
        ate_quando=substituto_servindo,
    )


def congelar_worker_da_web(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    web = impl.webs[f.alvo % len(impl.webs)]
    pid = _escolher(impl.workers_da_web(web), f.sorte)
    if pid is None:
        return Efeito(pulada=f"web {web.indice}: sem workers")
    _sinalizar([pid], signal.SIGSTOP)
    return Efeito(
        pids=[pid],
        detalhe=f"web {web.indice}",
        webs=[web.indice],
        desfazer=_continuar([pid]),
    )


def terminar_backends(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    """pg_terminate_backend of 1-3 backends of the deployment, never the
    ledger's nor the harness's."""
    with impl.conectar() as conexao:
        linhas = conexao.execute(
            """
            SELECT pid, application_name, state FROM pg_stat_activity
             WHERE datname = current_database() AND backend_type = 'client backend'
               AND pid <> pg_backend_pid()
               AND application_name NOT LIKE %s AND application_name <> %s
             ORDER BY pid
            """,
            [f"{PREFIXO}%", HARNESS],
        ).fetchall()
        sorte = random.Random(f.sorte)
        alvos = sorte.sample(linhas, min(f.quantos, len(linhas)))
        feitos, webs = [], set()
        for pid, nome, estado in alvos:
            conexao.execute("SELECT pg_terminate_backend(%s)", [pid])
            feitos.append(f"{nome or '?'}({estado})")
            if nome.startswith("caos-web-"):
                webs.add(int(nome.rsplit("-", 1)[1]))
    if not alvos:
        return Efeito(pulada="nenhum backend")
    return Efeito(
        pids=[pid for pid, _, _ in alvos], detalhe=", ".join(feitos), webs=sorted(webs)
    )


def reiniciar_replica(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    replica = impl.replica
    if replica is None:
        return Efeito(pulada="sem réplica")
    replica.parar()

    def voltar() -> str:
        replica.iniciar()
        return "réplica de volta"

    return Efeito(detalhe="parada rápida (pg_ctl stop -m fast)", desfazer=voltar)


def congelar_replica(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    if impl.replica is None:
        return Efeito(pulada="sem réplica")
    pids = pids_da_instancia(impl.replica)
    if not pids:
        return Efeito(pulada="réplica fora do ar")
    _sinalizar(pids, signal.SIGSTOP)
    return Efeito(pids=pids, detalhe="postmaster e filhos", desfazer=_continuar(pids))


def pausar_replay(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    replica = impl.replica
    if replica is None:
        return Efeito(pulada="sem réplica")
    try:
        replica.sql("SELECT pg_wal_replay_pause()")
    except Exception as erro:
        return Efeito(pulada=f"réplica não respondeu: {type(erro).__name__}")

    def retomar() -> str:
        replica.sql("SELECT pg_wal_replay_resume()")
        return "replay retomado"

    return Efeito(detalhe="pg_wal_replay_pause()", desfazer=retomar)


def tirar_smtp(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    smtp = impl.smtp
    assert smtp is not None
    smtp.sair()

    def voltar() -> str:
        smtp.voltar()
        return "SMTP de volta"

    return Efeito(detalhe=f"porta {smtp.porta}", desfazer=voltar)


def tirar_ganchos(impl: Implantacao, f: FalhaPlanejada) -> Efeito:
    ganchos = impl.ganchos
    assert ganchos is not None
    ganchos.sair()

    def voltar() -> str:
        ganchos.voltar()
        return "webhooks de volta"

    return Efeito(detalhe=f"porta {ganchos.porta}", desfazer=voltar)


# The registry: a new fault kind is one function and one line here. `ocupa`:
# what a fault holds while it lasts ("cluster": its target cluster;
# "clusters": all of them); a fault whose target is held by one not yet
# undone is skipped (a replica restarted while frozen would wait forever).
FALHAS: dict[str, TipoDeFalha] = {
    t.nome: t
    for t in (
        TipoDeFalha("kill9_worker_cluster", 3, (0, 0), matar_worker_do_cluster),
        TipoDeFalha(
            "sigstop_worker_cluster", 2, (2, 16), congelar_worker_do_cluster, "cluster"
        ),
        TipoDeFalha("kill9_cluster", 1, (1, 4), matar_cluster, "cluster"),
        TipoDeFalha("sigstop_cluster", 1, (1, 12), congelar_cluster, "cluster"),
        TipoDeFalha(
            "agendador_atrasado", 0.5, (4.5, 6.5), atrasar_agendadores, "clusters"
        ),
        TipoDeFalha("kill9_worker_web", 2, (0, 0), matar_worker_da_web),
        TipoDeFalha("sigstop_worker_web", 1, (0.5, 4), congelar_worker_da_web),
        TipoDeFalha("pg_terminate_backend", 3, (0, 0), terminar_backends),
        TipoDeFalha("replica_reinicio", 0.7, (1, 5), reiniciar_replica, "replica"),
        TipoDeFalha("replica_congelada", 0.7, (1, 6), congelar_replica, "replica"),
        TipoDeFalha("replica_replay_pausado", 0.7, (2, 8), pausar_replay, "replica"),
        TipoDeFalha("smtp_fora", 1, (2, 10), tirar_smtp, "smtp"),
        TipoDeFalha("webhooks_fora", 1, (2, 10), tirar_ganchos, "ganchos"),
    )
}


def habilitadas(*, replica: bool, sem: frozenset[str] = frozenset()) -> list[str]:
    desconhecidas = sem - FALHAS.keys()
    if desconhecidas:
        raise ValueError(f"unknown fault kinds: {', '.join(sorted(desconhecidas))}")
    return [
        nome
        for nome, tipo in FALHAS.items()
        if nome not in sem and (replica or not tipo.so_com_replica)
    ]


def planejar(
    *,
    semente: int,
    duracao_s: float,
    intervalo_medio_s: float,
    tipos: list[str],
    clusters: int = 3,
) -> list[FalhaPlanejada]:
    """The faults of a run: a pure function of its arguments.

    Every fault draws the same fields in the same order whatever its kind,
    so a kind's parameters never shift the rest of the plan. A fault aimed
    at a cluster still held by an earlier one (see `ocupa`) moves to the
    next free cluster; a killed cluster counts as held for REINICIO_S more,
    the time it takes to start again. The last seconds stay free: a fault
    started then would outlive the phase.
    """
    sorte = random.Random(semente)
    pesos = [FALHAS[t].peso for t in tipos]
    plano: list[FalhaPlanejada] = []
    ocupados: dict[str, float] = {}  # key -> until when (s into the phase)
    em = 0.0
    while True:
        em += sorte.uniform(0.2, 2 * intervalo_medio_s - 0.2)
        tipo = FALHAS[sorte.choices(tipos, weights=pesos)[0]]
        minimo, maximo = tipo.duracao
        falha = FalhaPlanejada(
            n=len(plano) + 1,
            em_s=round(em, 3),
            tipo=tipo.nome,
            duracao_s=round(sorte.uniform(minimo, maximo), 3),
            alvo=sorte.randrange(1000),
            sorte=sorte.random(),
            quantos=sorte.randint(1, 3),
        )
        if em >= duracao_s - 2:
            return plano
        if tipo.ocupa == "cluster":
            for desvio in range(clusters):
                candidata = replace(falha, alvo=falha.alvo + desvio)
                if all(
                    ocupados.get(c, -1.0) < em for c in tipo.chaves(candidata, clusters)
                ):
                    falha = candidata
                    break
        chaves = tipo.chaves(falha, clusters)
        if all(ocupados.get(c, -1.0) < em for c in chaves):
            # Held from now on; one that stays held is skipped when it runs.
            extra = REINICIO_S if tipo.nome == "kill9_cluster" else 0.0
            ocupados.update(dict.fromkeys(chaves, em + falha.duracao_s + extra))
        plano.append(falha)


def assinatura(plano: list[FalhaPlanejada]) -> str:
    texto = "\n".join(json.dumps(asdict(f), sort_keys=True) for f in plano)
    return hashlib.sha256(texto.encode()).hexdigest()


def gravar_plano(plano: list[FalhaPlanejada], arquivo: Path) -> None:
    arquivo.write_text("".join(json.dumps(asdict(f)) + "\n" for f in plano))


class Injetor(threading.Thread):
    """Carries out a plan from `inicio` (epoch seconds) on, logging each fault."""

    def __init__(
        self, impl: Implantacao, plano: list[FalhaPlanejada], log: Path
    ) -> None:
        super().__init__(name="injetor", daemon=True)
        self.impl = impl
        self.plano = plano
        self.log = log
        self.inicio = 0.0
        self.registros: list[Registro] = []
        self.erros: list[str] = []
        self._parar = threading.Event()
        # (when, n, undo) of the faults not yet undone, and what each holds.
        self._pendentes: list[tuple[float, int, Callable[[], str]]] = []
        self._ocupados: dict[str, int] = {}
        self._trava = threading.Lock()

    def run(self) -> None:
        for falha in self.plano:
            quando = self.inicio + falha.em_s
            while not self._parar.is_set() and time.time() < quando:
                self._desfazer_vencidas(quando)
            if self._parar.is_set():
                break
            self._executar(falha)
        while not self._parar.is_set():
            self._desfazer_vencidas(time.time() + 0.5)

    def _esperar(self, ate: float) -> None:
        self._parar.wait(max(0.0, min(ate, time.time() + 0.1) - time.time()))

    def _desfazer_vencidas(self, ate: float) -> None:
        with self._trava:
            proxima = self._pendentes[0][0] if self._pendentes else ate
        if proxima <= time.time():
            with self._trava:
                _, n, desfazer = heapq.heappop(self._pendentes)
            self._desfazer(n, desfazer)
            return
        self._esperar(min(proxima, ate))

    def _executar(self, falha: FalhaPlanejada) -> None:
        inicio = time.time()
        tipo = FALHAS[falha.tipo]
        chaves = tipo.chaves(falha, len(self.impl.clusters))
        with self._trava:
            ocupante = next(
                (self._ocupados[c] for c in chaves if c in self._ocupados), None
            )
        if ocupante is not None:
            efeito = Efeito(pulada=f"alvo ocupado pela falha {ocupante}")
        else:
            try:
                efeito = tipo.iniciar(self.impl, falha)
            except Exception as erro:  # a fault that cannot run is logged
                efeito = Efeito(pulada=f"erro: {type(erro).__name__}: {erro}")
                self.erros.append(f"falha {falha.n} ({falha.tipo}): {erro!r}")
        registro = Registro(
            n=falha.n,
            tipo=falha.tipo,
            planejada_s=falha.em_s,
            inicio=inicio,
            fim=inicio,
            pids=efeito.pids,
            detalhe=efeito.detalhe,
            webs=efeito.webs,
            pulada=efeito.pulada,
        )
        self.registros.append(registro)
        if efeito.desfazer is not None:
            with self._trava:
                self._ocupados.update(dict.fromkeys(chaves, falha.n))
                heapq.heappush(
                    self._pendentes,
                    (inicio + falha.duracao_s, falha.n, efeito.desfazer),
                )
        elif efeito.ate_quando is not None:
            fio = threading.Thread(
                target=self._esperar_efeito, args=(registro, efeito.ate_quando)
            )
            fio.start()
            REINICIOS.append(fio)
        else:
            self._gravar(registro)

    def _esperar_efeito(
        self, registro: Registro, ate_quando: Callable[[], float]
    ) -> None:
        registro.fim = ate_quando()
        self._gravar(registro)

    def _desfazer(self, n: int, desfazer: Callable[[], str]) -> None:
        registro = next(r for r in self.registros if r.n == n)
        try:
            registro.desfeita = desfazer()
        except Exception as erro:
            registro.desfeita = f"erro: {type(erro).__name__}: {erro}"
            self.erros.append(f"desfazer a falha {n}: {erro!r}")
        registro.fim = time.time()
        with self._trava:
            for chave in [c for c, n_ in self._ocupados.items() if n_ == n]:
                del self._ocupados[chave]
        self._gravar(registro)

    def _gravar(self, registro: Registro) -> None:
        with self.log.open("a") as arquivo:
            arquivo.write(json.dumps(asdict(registro), ensure_ascii=False) + "\n")

    def encerrar(self) -> None:
        """Stop injecting and undo, now, every fault not yet undone."""
        self._parar.set()
        self.join(60)
        with self._trava:
            pendentes = sorted(self._pendentes)
            self._pendentes.clear()
        for _, n, desfazer in pendentes:
            self._desfazer(n, desfazer)
        for fio in REINICIOS:
            fio.join(120)

    def executadas(self) -> list[Registro]:
        return [r for r in self.registros if not r.pulada]


def pids_congelados(registros: list[Registro]) -> dict[int, list[tuple[float, float]]]:
    """Each pid the injector froze (SIGSTOP), with when it was frozen."""
    congelados: dict[int, list[tuple[float, float]]] = {}
    for r in registros:
        if r.pulada or r.tipo not in (
            "sigstop_worker_cluster",
            "sigstop_cluster",
        ):
            continue
        for pid in r.pids:
            congelados.setdefault(pid, []).append((r.inicio, r.fim))
    return congelados
