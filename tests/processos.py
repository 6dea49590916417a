"""Real processes for tests: the web server and qcluster on the test database."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

RAIZ = Path(__file__).resolve().parent.parent
# The tests' signing key, set explicitly for this process and every child: the
# built-in development key is refused with DEBUG off (config/arranque.py).
CHAVE_DE_TESTE = "relatorios-testes-chave-que-nao-e-segredo-9d41c7e2b06f4a58"
TIPOS_DE_TESTE = ",".join(
    f"tests.tipos_de_teste.{nome}"
    for nome in (
        "Quebrado",
        "Lento",
        "Contado",
        "ContadoReusavel",
        "Dorminhoco",
        "Fechamento",
        "Volumoso",
        "VendasEmEspera",
    )
)


def ambiente(**extras: str) -> dict[str, str]:
    """The environment of a child process: same code, the test database."""
    banco = connection.settings_dict
    usuario = quote(banco.get("USER") or "")
    senha = banco.get("PASSWORD") or ""
    credenciais = f"{usuario}:{quote(senha)}@" if senha else f"{usuario}@"
    # Test defaults first, then what the test set in the environment (the
    # `ajustes` fixture), then the explicit extras.
    # Logs as key=value, which the tests grep (test_logs.py asks for JSON).
    env = {"RELATORIOS_BATIMENTO_S": "0.5", "Q_POLL_S": "0.05", "LOG_FORMAT": "texto"}
    env.update(os.environ)
    # Set for the browser test's own process only (tests/paginas/test_navegador.py).
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env.update(
        {
            "DATABASE_URL": (
                f"postgres://{credenciais}{banco.get('HOST') or '127.0.0.1'}:"
                f"{banco.get('PORT') or 5432}/{banco['NAME']}"
            ),
            "RELATORIOS_TIPOS_EXTRAS": TIPOS_DE_TESTE,
            "DJANGO_STATIC_ROOT": str(settings.STATIC_ROOT),
            # The key this process signs with (tests/conftest.py sets it): a
            # queue message written here must verify in the cluster.
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extras)
    return env


def porta_livre() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Processo:
    """A child in its own process group, so a signal reaches all it forked."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
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

    @property
    def pid(self) -> int:
        return self.popen.pid

    def vivo(self) -> bool:
        return self.popen.poll() is None

    def sinal(self, sinal: int, *, grupo: bool = True) -> None:
        try:
            if grupo:
                os.killpg(self.pid, sinal)
            else:
                os.kill(self.pid, sinal)
        except ProcessLookupError:
            pass

    def parar(self, timeout: float = 30) -> None:
        """SIGTERM to the main process (graceful), then SIGKILL to the group."""
        if self.vivo():
            self.sinal(signal.SIGTERM, grupo=False)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout)
        self.matar()

    def matar(self) -> None:
        self.sinal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)
        self._saida.close()

    def texto_do_log(self) -> str:
        return self.log.read_text(errors="replace")


def iniciar_cluster(log: Path, **extras: str) -> Processo:
    processo = Processo(
        [sys.executable, "manage.py", "qcluster"], ambiente(**extras), log
    )
    _esperar_texto(processo, "supervisor pronto", "qcluster")
    return processo


def iniciar_web(
    log: Path, *, alvo: str | None = None, **extras: str
) -> tuple[Processo, str]:
    """The production web server (config/servidor.py: granian) on a free port.

    `alvo`: another WSGI target (tests/wsgi_de_teste.py for the server's own
    tests); the launcher, its workers and watchdog are the same.
    """
    porta = porta_livre()
    # No access log unless a test asks for one (test_logs.py does).
    env = ambiente(**{"WEB_BIND": f"127.0.0.1:{porta}", "WEB_ACCESSLOG": "", **extras})
    processo = Processo(
        [sys.executable, "-m", "config.servidor", *([alvo] if alvo else [])],
        env,
        log,
    )
    url = f"http://127.0.0.1:{porta}"
    _esperar_401(processo, f"{url}/relatorios/jobs/1", "o servidor web")
    return processo, url


def iniciar_eventos(log: Path, **extras: str) -> tuple[Processo, str]:
    """The events process (config/eventos.py: granian's ASGI) on a free port."""
    porta = porta_livre()
    env = ambiente(**{"EVENTOS_BIND": f"127.0.0.1:{porta}", **extras})
    processo = Processo([sys.executable, "-m", "config.eventos"], env, log)
    url = f"http://127.0.0.1:{porta}"
    _esperar_401(processo, f"{url}/relatorios/eventos", "o processo de eventos")
    return processo, url


def iniciar_proxy(log: Path, *, web: str, eventos: str) -> tuple[Processo, str]:
    """nginx with deploy/nginx/relatorios.conf (config/proxy.py) in front of
    a web server and an events process: the pages' one origin."""
    porta = porta_livre()
    env = ambiente(
        PROXY_BIND=f"127.0.0.1:{porta}",
        WEB_BIND=web.removeprefix("http://"),
        EVENTOS_BIND=eventos.removeprefix("http://"),
    )
    processo = Processo([sys.executable, "-m", "config.proxy"], env, log)
    url = f"http://127.0.0.1:{porta}"
    _esperar_401(processo, f"{url}/relatorios/eventos", "o proxy")
    return processo, url


def _esperar_401(processo: Processo, url: str, nome: str) -> None:
    """Until the app answers (401: no credentials), or the process died."""
    limite = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
        except urllib.error.HTTPError:
            return
        except OSError:
            if not processo.vivo() or time.monotonic() > limite:
                processo.matar()
                raise RuntimeError(
                    f"{nome} não subiu:\n{processo.texto_do_log()}"
                ) from None
            time.sleep(0.1)


def _esperar_texto(processo: Processo, texto: str, nome: str) -> None:
    limite = time.monotonic() + 60
    while texto not in processo.texto_do_log():
        if not processo.vivo() or time.monotonic() > limite:
            processo.matar()
            raise RuntimeError(f"{nome} não subiu:\n{processo.texto_do_log()}")
        time.sleep(0.1)


def filhos(pid: int) -> list[int]:
    """Direct children of a process, from /proc."""
    caminho = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(p) for p in caminho.read_text().split()]
    except FileNotFoundError:
        return []


def requisitar(
    metodo: str, url: str, *, token: str, corpo: bytes | None = None
) -> tuple[int, Message, Any]:
    """One real HTTP request; returns status, headers and the parsed JSON body."""
    import json

    pedido = urllib.request.Request(url, data=corpo, method=metodo)
    pedido.add_header("Authorization", f"Token {token}")
    if corpo is not None:
        pedido.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(pedido, timeout=60) as resposta:
            return resposta.status, resposta.headers, json.loads(resposta.read())
    except urllib.error.HTTPError as erro:
        return erro.code, erro.headers, json.loads(erro.read() or b"null")
