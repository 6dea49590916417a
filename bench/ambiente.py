"""Processes, the bench database and CPU accounting, shared by every scenario.

Every process the bench starts is registered here and runs in its own session,
so `parar_todos` can end it and all it forked (web workers, qcluster
workers) by process group, on success, failure or Ctrl-C alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psycopg
from psycopg import sql

from config.servidor import workers_padrao

RAIZ = Path(__file__).resolve().parent.parent
SAIDA = RAIZ / "bench-output"
TICKS_POR_S = os.sysconf("SC_CLK_TCK")
PYTHON = sys.executable


# --- processes -----------------------------------------------------------------


class Processo:
    """A child in its own session: a signal to its group reaches all it forked."""

    def __init__(
        self, nome: str, args: list[str], env: dict[str, str], log: Path
    ) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        self.nome = nome
        self.log = log
        self._saida: IO[bytes] = log.open("ab")
        self.popen = subprocess.Popen(
            args,
            cwd=RAIZ,
            env=env,
            stdout=self._saida,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _iniciados.append(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def vivo(self) -> bool:
        return self.popen.poll() is None

    def pids(self) -> list[int]:
        """The process and everything it forked (same process group)."""
        return pids_do_grupo(self.pid)

    def parar(self, timeout: float = 20) -> None:
        """SIGTERM to the main process (graceful), then SIGKILL to the group."""
        if self.vivo():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)
        self._saida.close()
        if self in _iniciados:
            _iniciados.remove(self)

    def texto_do_log(self) -> str:
        return self.log.read_text(errors="replace")


_iniciados: list[Processo] = []


def parar_todos() -> None:
    """Ends every process the bench started that is still registered."""
    for processo in reversed(list(_iniciados)):
        processo.parar(timeout=10)


def ambiente(**extras: str) -> dict[str, str]:
    """A child's environment: ours (DATABASE_URL is the bench database) + extras."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extras)
    return env


def porta_livre() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def iniciar_web(
    nome: str, servidor: str = "granian", **extras: str
) -> tuple[Processo, str]:
    """The web server on a free port, production settings, access log off.

    `servidor`: `granian` (config/servidor.py as it ships), or `granian:WxT`
    (W workers x T threads) for comparing shapes (B1 --servers). Always
    through the production launcher: its watchdog and access-log path are
    part of every figure (a run shorter than WEB_WORKER_LIFETIME_S replaces
    no worker). (gunicorn, the server before, was measured against it in
    docs/historico/benchmarks.md and removed.)
    """
    porta = porta_livre()
    # The web refuses to start without the collected static files
    # (config/arranque.py): collect them once into the bench's own folder.
    estaticos = SAIDA / "estaticos"
    if not (estaticos / "staticfiles.json").exists():
        subprocess.run(
            [PYTHON, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            env=ambiente(DJANGO_STATIC_ROOT=str(estaticos)),
            check=True,
        )
    extras.setdefault("DJANGO_STATIC_ROOT", str(estaticos))
    modelo, _, forma = servidor.partition(":")
    if modelo != "granian":
        raise ValueError(f"unknown server {servidor!r}")
    workers_s, _, threads_s = forma.partition("x")
    variaveis: dict[str, str] = {}
    if workers_s:
        variaveis["WEB_WORKERS"] = workers_s
    if threads_s:
        variaveis["WEB_THREADS"] = threads_s
    env = ambiente(
        WEB_BIND=f"127.0.0.1:{porta}",
        # Access logs are a deployment choice (often the proxy's); the app's
        # own log lines (job aceito ...) stay on, as in production.
        WEB_ACCESSLOG="",
        **variaveis,
        **extras,
    )
    n = int(env.get("WEB_WORKERS") or workers_padrao())
    args = [PYTHON, "-m", "config.servidor"]
    processo = Processo(modelo, args, env, SAIDA / f"{nome}-{modelo}.log")
    url = f"http://127.0.0.1:{porta}"
    limite = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/relatorios/jobs/1", timeout=2)
        except urllib.error.HTTPError:
            break  # 401: the app answers
        except OSError:
            if not processo.vivo() or time.monotonic() > limite:
                texto = processo.texto_do_log()
                processo.parar()
                raise RuntimeError(f"{servidor} did not start:\n{texto}") from None
            time.sleep(0.1)
    # Every worker must be up (and its first import done) before a figure.
    esperar_filhos(processo, n)
    return processo, url


def iniciar_cluster(nome: str, **extras: str) -> Processo:
    processo = Processo(
        "qcluster",
        [PYTHON, "manage.py", "qcluster"],
        ambiente(**extras),
        SAIDA / f"{nome}-qcluster.log",
    )
    limite = time.monotonic() + 60
    while "running." not in processo.texto_do_log():
        if not processo.vivo() or time.monotonic() > limite:
            texto = processo.texto_do_log()
            processo.parar()
            raise RuntimeError(f"qcluster did not start:\n{texto}")
        time.sleep(0.1)
    return processo


def esperar_filhos(processo: Processo, n: int, timeout: float = 30) -> None:
    limite = time.monotonic() + timeout
    while len(filhos(processo.pid)) < n and time.monotonic() < limite:
        time.sleep(0.1)


def filhos(pid: int) -> list[int]:
    try:
        texto = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [int(p) for p in texto.split()]


class Perfil:
    """py-spy on a process and all its children, until `parar` (--profile).

    Only the thread holding the GIL is sampled (--gil): in a GIL-bound
    server that is where CPU time goes. Collapsed stacks (one line per stack,
    sample count last) go to bench-output/perfil-<nome>.txt, and
    `python -m bench.perfil` summarizes them. Sampling costs CPU too: the
    figures of a profiled run are not the published ones.
    """

    def __init__(self, pid: int, nome: str) -> None:
        pyspy = shutil.which("py-spy", path=str(Path(PYTHON).parent))
        if pyspy is None:
            raise RuntimeError("--profile needs py-spy: .venv/bin/pip install py-spy")
        self.saida = SAIDA / f"perfil-{nome}.txt"
        args = [pyspy, "record", "--pid", str(pid), "--subprocesses", "--gil"]
        args += ["--nonblocking", "--format", "raw", "--output", str(self.saida)]
        self.processo = Processo(
            "py-spy", args, ambiente(), SAIDA / f"perfil-{nome}.log"
        )

    def parar(self) -> None:
        # SIGINT is py-spy's "stop and write the file".
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.processo.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.processo.popen.wait(60)
        self.processo.parar()


# --- wrk -------------------------------------------------------------------------


def garantir_wrk() -> str:
    """The wrk binary; installs Debian's package when it is missing."""
    caminho = shutil.which("wrk")
    if caminho:
        return caminho
    print("# wrk not found: apt-get install -y wrk", flush=True)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=False)
    subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "wrk"], check=True)
    caminho = shutil.which("wrk")
    if not caminho:
        raise RuntimeError("wrk is still missing after apt-get install")
    return caminho


# --- the bench database ------------------------------------------------------------


@dataclass(frozen=True)
class Banco:
    """Where the bench's own database lives (server from DATABASE_URL)."""

    host: str
    porta: int
    usuario: str
    senha: str
    nome: str

    @property
    def url(self) -> str:
        credenciais = (
            f"{self.usuario}:{self.senha}@" if self.senha else (f"{self.usuario}@")
        )
        return f"postgres://{credenciais}{self.host}:{self.porta}/{self.nome}"

    def conectar(self, nome: str | None = None) -> psycopg.Connection:
        return psycopg.connect(
            host=self.host,
            port=self.porta,
            user=self.usuario,
            password=self.senha or None,
            dbname=nome or self.nome,
            autocommit=True,
        )

    def criar(self) -> None:
        """Creates the database, dropping a leftover of an interrupted run first."""
        self.apagar()
        with self.conectar("postgres") as conexao:
            conexao.execute(
                sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.nome))
            )

    def sem_jobs(self) -> None:
        """No jobs and an empty queue; tenants and their ERP data stay.

        Before each scenario (B1 leaves thousands of pending jobs and their
        queue messages, which a later cluster would first work through, and
        B4's "0 jobs" would not be 0), and between B11's two runs (each
        predicts from its own request history).
        """
        with self.conectar() as conexao:
            # CASCADE: what hangs off a job (attempts, partials,
            # subscriptions, deliveries...) goes with it, whatever tables
            # later features add.
            conexao.execute(
                "TRUNCATE relatorio_jobs, relatorio_tentativas, relatorio_parciais,"
                " django_q_ormq, django_q_task CASCADE"
            )

    def apagar(self) -> None:
        # FORCE ends the backends still connected (ours, if a child was killed).
        with self.conectar("postgres") as conexao:
            conexao.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(self.nome)
                )
            )


# --- CPU accounting ------------------------------------------------------------------


def _campos_stat(pid: int) -> list[str] | None:
    try:
        texto = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name is in parentheses and may contain spaces.
    return texto[texto.rfind(")") + 2 :].split()


def ticks(pid: int) -> int:
    """utime + stime of a live process, in clock ticks (0 once it is gone)."""
    campos = _campos_stat(pid)
    return int(campos[11]) + int(campos[12]) if campos else 0


def pids_do_grupo(pgid: int) -> list[int]:
    pids = []
    for entrada in Path("/proc").iterdir():
        if not entrada.name.isdigit():
            continue
        campos = _campos_stat(int(entrada.name))
        if campos and int(campos[2]) == pgid:
            pids.append(int(entrada.name))
    return pids


_monitor: dict[str, psycopg.Connection] = {}
_monitor_trava = threading.Lock()


def pids_do_banco(banco: Banco) -> list[int]:
    """The PostgreSQL backends serving the bench database right now.

    Asked on one long-lived connection to the maintenance database: a new
    connection per question would fork a backend each time, the very CPU
    being measured.
    """
    with _monitor_trava:
        conexao = _monitor.get(banco.url)
        if conexao is None or conexao.closed:
            conexao = _monitor[banco.url] = banco.conectar("postgres")
        linhas = conexao.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", [banco.nome]
        ).fetchall()
    return [int(pid) for (pid,) in linhas]


def fechar_monitor() -> None:
    with _monitor_trava:
        for conexao in _monitor.values():
            conexao.close()
        _monitor.clear()


def ticks_da_maquina() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    valores = [
        int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]
    ]
    ocioso = valores[3] + valores[4]  # idle + iowait
    total = sum(valores[:8])
    return total - ocioso, total


@dataclass
class MedidorCpu:
    """CPU use of named groups of processes over a window, in % of one core.

    `grupos` maps a name to a function listing the group's pids. A thread
    lists them twice a second and remembers each pid's last CPU time, so a
    process that is born and dies inside the window (a connection's backend,
    a replaced worker) still counts, up to its last sample. `maquina` is the
    whole machine, other engineers' work included: the noise next to every
    figure.
    """

    grupos: dict[str, Callable[[], list[int]]]
    # Groups whose processes are also shown one by one (an unbalanced
    # server is one busy worker next to idle ones).
    detalhar: frozenset[str] = frozenset({"granian"})
    detalhe: dict[str, list[float]] = field(default_factory=dict)
    _inicio: dict[str, dict[int, int]] = field(default_factory=dict)
    _vistos: dict[str, dict[int, int]] = field(default_factory=dict)
    _t0: float = 0.0
    _maquina0: tuple[int, int] = (0, 0)
    _extras: dict[str, float] = field(default_factory=dict)
    _parar: threading.Event = field(default_factory=threading.Event)
    _fio: threading.Thread | None = None

    def iniciar(self) -> None:
        self._inicio = {
            nome: {pid: ticks(pid) for pid in listar()}
            for nome, listar in self.grupos.items()
        }
        self._vistos = {nome: dict(pids) for nome, pids in self._inicio.items()}
        self._extras = {}
        self._maquina0 = ticks_da_maquina()
        self._t0 = time.monotonic()
        self._parar = threading.Event()
        self._fio = threading.Thread(target=self._amostrar, daemon=True)
        self._fio.start()

    def _amostrar(self) -> None:
        while not self._parar.wait(0.5):
            self._registrar()

    def _registrar(self) -> None:
        for nome, listar in self.grupos.items():
            vistos = self._vistos.setdefault(nome, {})
            for pid in listar():
                agora = ticks(pid)
                if agora:
                    vistos[pid] = agora

    def somar_segundos(self, nome: str, segundos: float) -> None:
        """CPU seconds measured elsewhere (a reaped child's rusage)."""
        self._extras[nome] = self._extras.get(nome, 0.0) + segundos

    def parar(self) -> dict[str, float]:
        self._parar.set()
        if self._fio is not None:
            self._fio.join()
        self._registrar()
        parede = max(time.monotonic() - self._t0, 1e-6)
        uso: dict[str, float] = {}
        for nome in self.grupos:
            antes = self._inicio.get(nome, {})
            vistos = self._vistos.get(nome, {})
            deltas = [max(0, fim - antes.get(pid, 0)) for pid, fim in vistos.items()]
            uso[nome] = 100.0 * sum(deltas) / TICKS_POR_S / parede
            if nome in self.detalhar:
                self.detalhe[nome] = sorted(
                    (100.0 * d / TICKS_POR_S / parede for d in deltas), reverse=True
                )
        for nome, segundos in self._extras.items():
            uso[nome] = uso.get(nome, 0.0) + 100.0 * segundos / parede
        ocupado1, total1 = ticks_da_maquina()
        ocupado0, total0 = self._maquina0
        nucleos = os.cpu_count() or 1
        uso["maquina"] = (
            100.0 * nucleos * (ocupado1 - ocupado0) / max(1, total1 - total0)
        )
        return uso


def formatar_cpu(
    uso: dict[str, float], detalhe: dict[str, list[float]] | None = None
) -> str:
    partes = []
    for nome, valor in uso.items():
        if nome == "maquina":
            continue
        texto = f"{nome}={valor:.0f}%"
        processos = [v for v in (detalhe or {}).get(nome, []) if v >= 1]
        if len(processos) > 1:
            texto += "(" + "+".join(f"{v:.0f}" for v in processos) + ")"
        partes.append(texto)
    nucleos = os.cpu_count() or 1
    partes.append(f"machine={uso.get('maquina', 0):.0f}%/{100 * nucleos}%")
    return "cpu " + " ".join(partes)


def pedir_vendas(
    url: str, token: str, corpo: dict[str, Any], timeout: float
) -> tuple[int, Any]:
    """`POST /relatorios/vendas` as a client app does: HTTP status and JSON
    body (a status other than 2xx raises urllib's HTTPError)."""
    pedido = urllib.request.Request(
        f"{url}/relatorios/vendas",
        data=json.dumps(corpo).encode(),
        method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(pedido, timeout=timeout) as resposta:
        return int(resposta.status), json.loads(resposta.read())
