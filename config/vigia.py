"""What granian's WSGI workers lack, done in each worker around the app.

granian (config/servidor.py starts it) keeps connections alive and parses
HTTP in Rust, but has no per-request timeout, no recycling after N requests
and an access log without the response's headers. `Vigia` wraps the WSGI
application in every worker and adds them:

- **per-request timeout** (WEB_TIMEOUT_S): a watchdog thread per worker looks
  at the requests in flight; one running longer than the timeout is logged
  (path, request id, seconds) and the worker hard-exits with os._exit, as
  gunicorn's arbiter kills a silent worker. A Python thread cannot be
  stopped from outside, so the process goes; granian respawns it
  (`respawn_failed_workers`). The other requests that worker had in flight
  fail with it, as they would under gunicorn.
- **recycling after N requests** (WEB_MAX_REQUESTS, plus up to 10% jitter):
  the worker asks the master, through a pipe, to replace it; the master
  starts a new worker, then stops this one gracefully (it finishes what it
  has in flight). From the moment it asks, the worker answers with
  `Connection: close`, so keep-alive clients move to other workers before it
  stops instead of meeting a closed connection.
- **the access log**: one line per request on `relatorios.acesso`, with the
  fields gunicorn's line had (config/logs.py): metodo, caminho, status,
  bytes, duracao_ms, remoto, request_id.

The request id is decided here (the client's X-Request-ID if plausible, else
a new one) and written back into the environ, so the watchdog's line, the
access line and the app's own lines (relatorios.logs.RequestIdMiddleware
keeps a valid id) carry the same id.

No Django at import time: the master imports this module before any worker
exists (the drain signal's handler is inherited by forked workers).
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

logger = logging.getLogger("relatorios.servidor")
acesso = logging.getLogger("relatorios.acesso")

# The master sends this to a worker it is about to replace (recycling, SIGHUP
# reload): the worker closes its keep-alive connections as it answers.
SINAL_DE_DRENAR = signal.SIGUSR1

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
App = Callable[[Environ, StartResponse], Iterable[bytes]]


class _Estado:
    drenando = False


ESTADO = _Estado()


def _ao_sinal_de_drenar(signum: int, frame: object) -> None:
    ESTADO.drenando = True


def instalar_sinal_de_drenar() -> None:
    """In the master, before forking: every worker has the handler from birth
    (a worker told to drain while still importing must not die of it)."""
    signal.signal(SINAL_DE_DRENAR, _ao_sinal_de_drenar)


class _EmCurso:
    __slots__ = ("caminho", "inicio", "request_id")

    def __init__(self, inicio: float, caminho: str, request_id: str) -> None:
        self.inicio = inicio
        self.caminho = caminho
        self.request_id = request_id


def _sair(codigo: int) -> None:  # a seam for the tests of the watchdog alone
    os._exit(codigo)


class Vigia:
    """The WSGI app with a timeout, a request budget and the access log."""

    def __init__(
        self,
        app: App,
        *,
        timeout_s: float,
        max_pedidos: int = 0,
        pedir_reciclagem: Callable[[], None] | None = None,
        sair: Callable[[int], None] | None = None,
    ) -> None:
        from relatorios.operacao.logs import request_id_valido

        self.app = app
        self.timeout_s = timeout_s
        # 0 turns recycling off; the jitter keeps workers from leaving together.
        self.limite = (
            max_pedidos + random.randint(0, max_pedidos // 10) if max_pedidos else 0
        )
        self.pedir_reciclagem = pedir_reciclagem
        self._sair = sair or _sair
        self._request_id_valido = request_id_valido
        self._em_curso: dict[int, _EmCurso] = {}
        self._sequencia = itertools.count()
        self._pedidos = 0
        self._trava = threading.Lock()
        self._vigia: threading.Thread | None = None
        self._pediu = False

    # The watchdog ---------------------------------------------------------

    def iniciar(self) -> None:
        """Start the watchdog thread (in the worker: threads do not survive fork)."""
        if self.timeout_s and self._vigia is None:
            self._vigia = threading.Thread(
                target=self._vigiar, name="relatorios-vigia", daemon=True
            )
            self._vigia.start()

    def _vigiar(self) -> None:
        intervalo = min(1.0, self.timeout_s / 4)
        while True:
            time.sleep(intervalo)
            self.verificar(time.monotonic())

    def verificar(self, agora: float) -> None:
        """Hard-exit the worker if a request has outlived the timeout."""
        vencido = next(
            (
                pedido
                for pedido in list(self._em_curso.values())
                if agora - pedido.inicio > self.timeout_s
            ),
            None,
        )
        if vencido is None:
            return
        logger.error(
            "pedido excedeu o timeout de %ss: worker encerrado",
            self.timeout_s,
            extra={
                "evento": "timeout_do_pedido",
                "caminho": vencido.caminho,
                "request_id": vencido.request_id,
                "duracao_s": round(agora - vencido.inicio, 1),
                "em_curso": len(self._em_curso),
            },
        )
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.flush()
        self._sair(1)

    # The request ----------------------------------------------------------

    def __call__(self, environ: Environ, start_response: StartResponse) -> Any:
        inicio = time.monotonic()
        request_id = self._request_id_valido(environ.get("HTTP_X_REQUEST_ID"))
        environ["HTTP_X_REQUEST_ID"] = request_id
        caminho = environ.get("PATH_INFO", "")
        chave = next(self._sequencia)
        self._em_curso[chave] = _EmCurso(inicio, caminho, request_id)
        self._contar()
        status: list[str] = []

        def responder(
            linha: str, cabecalhos: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if ESTADO.drenando:
                cabecalhos = [
                    (nome, valor)
                    for nome, valor in cabecalhos
                    if nome.lower() != "connection"
                ] + [("Connection", "close")]
            status[:] = [linha]
            if exc_info is None:
                return start_response(linha, cabecalhos)
            return start_response(linha, cabecalhos, exc_info)

        try:
            resposta = self.app(environ, responder)
        except BaseException:
            self._terminar(chave, environ, inicio, "500", None, request_id)
            raise
        if getattr(resposta, "streaming", True) is False:
            # A Django response already in memory: its bytes go to granian
            # as one buffer (written by Rust, no Python thread held by a slow
            # reader), and it is closed now (request_finished: connections).
            corpo = resposta.content  # type: ignore[attr-defined]
            resposta.close()  # type: ignore[attr-defined]
            self._terminar(
                chave, environ, inicio, _codigo(status), len(corpo), request_id
            )
            return [corpo]
        return _Corpo(self, resposta, chave, environ, inicio, status, request_id)

    def _contar(self) -> None:
        with self._trava:
            self._pedidos += 1
            chegou = bool(self.limite) and self._pedidos >= self.limite
            if not chegou or self._pediu:
                return
            self._pediu = True
        ESTADO.drenando = True
        logger.info(
            "worker atendeu %s pedidos: pedindo a reciclagem",
            self._pedidos,
            extra={"evento": "reciclagem", "pedidos": self._pedidos},
        )
        if self.pedir_reciclagem is not None:
            self.pedir_reciclagem()

    def _terminar(
        self,
        chave: int,
        environ: Environ,
        inicio: float,
        status: str,
        tamanho: int | None,
        request_id: str,
    ) -> None:
        self._em_curso.pop(chave, None)
        if not acesso.isEnabledFor(logging.INFO):
            return
        metodo = environ.get("REQUEST_METHOD", "")
        caminho = environ.get("PATH_INFO", "")
        acesso.info(
            "%s %s %s",
            metodo,
            caminho,
            status,
            extra={
                "evento": "acesso",
                "remoto": environ.get("REMOTE_ADDR", "-"),
                "metodo": metodo,
                "caminho": caminho,
                "status": status,
                "bytes": "-" if tamanho is None else tamanho,
                "duracao_ms": round((time.monotonic() - inicio) * 1000, 1),
                "request_id": request_id,
            },
        )


def _codigo(status: list[str]) -> str:
    return status[0].split(" ", 1)[0] if status else "500"


class _Corpo:
    """A streamed body: the request is over (watchdog, access log) at close()."""

    def __init__(
        self,
        vigia: Vigia,
        resposta: Iterable[bytes],
        chave: int,
        environ: Environ,
        inicio: float,
        status: list[str],
        request_id: str,
    ) -> None:
        self._vigia = vigia
        self._resposta = resposta
        self._chave = chave
        self._environ = environ
        self._inicio = inicio
        self._status = status
        self._request_id = request_id
        self._bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        for pedaco in self._resposta:
            self._bytes += len(pedaco)
            yield pedaco

    def close(self) -> None:
        try:
            fechar = getattr(self._resposta, "close", None)
            if fechar is not None:
                fechar()
        finally:
            self._vigia._terminar(
                self._chave,
                self._environ,
                self._inicio,
                _codigo(self._status),
                self._bytes,
                self._request_id,
            )
