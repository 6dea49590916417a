"""What granian's WSGI workers lack, done in each worker around the app.

granian (config/servidor.py starts it) keeps connections alive, parses HTTP
in Rust and replaces workers by age, memory or SIGHUP, but has no
per-request timeout, stops a worker without first closing its keep-alive
connections, and writes an access log without the response's headers.
`Vigia` wraps the WSGI application in every worker and adds them:

- **per-request timeout** (WEB_TIMEOUT_S): a watchdog thread per worker looks
  at the requests in flight; one running longer than the timeout is logged
  (path, request id, seconds) and the worker hard-exits with os._exit, as
  gunicorn's arbiter killed a silent worker. A Python thread cannot be
  stopped from outside, so the process goes; granian respawns it
  (`respawn_failed_workers`). The other requests that worker had in flight
  fail with it, as they would under gunicorn.
- **draining before a replacement**: when granian is about to replace this
  worker (its lifetime nearly over, its memory over the limit, or the
  master's SIGHUP hook sent SINAL_DE_DRENAR), it answers with
  `Connection: close`. granian closes a stopping worker's idle keep-alive
  connections, and a client that sent a request on one at that moment got
  an error; drained first, busy clients have already moved to other workers.
- **the access log**: one line per request on `relatorios.acesso`, with the
  fields gunicorn's line had (config/logs.py): metodo, caminho, status,
  bytes, duracao_ms, remoto (the client's address, as
  relatorios.operacao.acesso reads it behind our proxies), request_id. The
  path of a download link, here and in the timeout's line, shows `***` for
  its token (`config.logs.caminho_para_o_log`).

The request id is decided here (the client's X-Request-ID if plausible, else
a new one) and written back into the environ, so the watchdog's line, the
access line and the app's own lines (relatorios.operacao.logs.RequestIdMiddleware
keeps a valid id) carry the same id.

No Django at import time: the master imports this module before any worker
exists (the drain signal's handler is inherited by forked workers).
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from config.logs import caminho_para_o_log

logger = logging.getLogger("relatorios.servidor")
acesso = logging.getLogger("relatorios.acesso")

# The master's SIGHUP hook sends this to every worker, all about to be
# replaced: each closes its keep-alive connections as it answers.
SINAL_DE_DRENAR = signal.SIGUSR1

# granian 2.8.9 checks lifetimes at ticks set for the next worker to expire
# (at most a second early) and replaces, successor first, each worker at
# least 95% through its lifetime: workers born together go at their end, the
# old one stopped `respawn_interval` after its successor starts. Draining 5 s
# before moves busy keep-alive clients away while keeping the drain (a new
# connection per request) short. A worker whose tick came early because a
# sibling was respawned after a crash goes undrained, as under plain granian.
DRENO_ANTES_DO_FIM_S = 5.0

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
    __slots__ = ("avisado", "caminho", "inicio", "request_id")

    def __init__(self, inicio: float, caminho: str, request_id: str) -> None:
        self.avisado = False
        self.inicio = inicio
        self.caminho = caminho
        self.request_id = request_id


def _sair(codigo: int) -> None:  # a seam for the tests of the watchdog alone
    os._exit(codigo)


def rss_atual() -> int:
    """This process's resident memory in bytes, as granian's monitor reads it."""
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Vigia:
    """The WSGI app with a timeout, draining before replacement and the access log."""

    def __init__(
        self,
        app: App,
        *,
        timeout_s: float,
        fim_da_vida: float | None = None,
        rss_max: int | None = None,
        ler_rss: Callable[[], int] = rss_atual,
        sair: Callable[[int], None] | None = None,
    ) -> None:
        """`fim_da_vida`: the time.monotonic() at which granian's lifetime
        replaces this worker; `rss_max`: granian's memory limit in bytes."""
        from relatorios.operacao.logs import request_id_valido

        self.app = app
        self.timeout_s = timeout_s
        self.drenar_em = (
            None if fim_da_vida is None else fim_da_vida - DRENO_ANTES_DO_FIM_S
        )
        self.rss_max = rss_max
        self._ler_rss = ler_rss
        self._sair = sair or _sair
        self._request_id_valido = request_id_valido
        self._em_curso: dict[int, _EmCurso] = {}
        self._sequencia = itertools.count()
        self._vigia: threading.Thread | None = None
        # Set by the watchdog: lifetime nearly over (stays) or memory over the
        # limit (granian samples it every 30 s; cleared if it falls back).
        self._perto_do_fim = False

    @property
    def drenando(self) -> bool:
        return ESTADO.drenando or self._perto_do_fim

    # The watchdog ---------------------------------------------------------

    def iniciar(self) -> None:
        """Start the watchdog thread (in the worker: threads do not survive fork)."""
        if self._vigia is None:
            self._vigia = threading.Thread(
                target=self._vigiar, name="relatorios-vigia", daemon=True
            )
            self._vigia.start()

    def _vigiar(self) -> None:
        intervalo = min(1.0, self.timeout_s / 4)
        while True:
            time.sleep(intervalo)
            agora = time.monotonic()
            self.avaliar_o_fim(agora)
            self.verificar(agora)

    def avaliar_o_fim(self, agora: float) -> None:
        """Drain once granian is about to replace this worker."""
        if self.drenar_em is not None and agora >= self.drenar_em:
            motivo = "vida"
        elif self.rss_max is not None and self._ler_rss() >= self.rss_max:
            motivo = "memoria"
        else:
            self._perto_do_fim = False
            return
        if not self._perto_do_fim:
            logger.info(
                "worker perto da substituição: fechando as conexões mantidas",
                extra={"evento": "dreno", "motivo": motivo},
            )
        self._perto_do_fim = True

    def verificar(self, agora: float) -> None:
        """Hard-exit the worker if a request has outlived the timeout."""
        drenando = self.drenando
        vencido = next(
            (
                pedido
                for pedido in list(self._em_curso.values())
                if agora - pedido.inicio > self.timeout_s
                and not (drenando and pedido.avisado)
            ),
            None,
        )
        if vencido is None:
            return
        logger.error(
            "pedido excedeu o timeout de %ss: %s",
            self.timeout_s,
            "o worker já está em substituição" if drenando else "worker encerrado",
            extra={
                "evento": "timeout_do_pedido",
                "caminho": vencido.caminho,
                "request_id": vencido.request_id,
                "duracao_s": round(agora - vencido.inicio, 1),
                "em_curso": len(self._em_curso),
            },
        )
        if drenando:
            # granian is replacing this worker: it stops it once its
            # successor has started and kills it past workers_kill_timeout.
            # An exit of ours now would be an unexpected death seconds after
            # the slot's respawn, which granian takes for a crash loop: it
            # stops the whole server.
            vencido.avisado = True
            return
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.flush()
        self._sair(1)

    # The request ----------------------------------------------------------

    def __call__(self, environ: Environ, start_response: StartResponse) -> Any:
        inicio = time.monotonic()
        request_id = self._request_id_valido(environ.get("HTTP_X_REQUEST_ID"))
        environ["HTTP_X_REQUEST_ID"] = request_id
        caminho = caminho_para_o_log(environ.get("PATH_INFO", ""))
        chave = next(self._sequencia)
        self._em_curso[chave] = _EmCurso(inicio, caminho, request_id)
        status: list[str] = []

        def responder(
            linha: str, cabecalhos: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if self.drenando:
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
        caminho = caminho_para_o_log(environ.get("PATH_INFO", ""))
        acesso.info(
            "%s %s %s",
            metodo,
            caminho,
            status,
            extra={
                "evento": "acesso",
                "remoto": _cliente(environ) or "-",
                "metodo": metodo,
                "caminho": caminho,
                "status": status,
                "bytes": "-" if tamanho is None else tamanho,
                "duracao_ms": round((time.monotonic() - inicio) * 1000, 1),
                "request_id": request_id,
            },
        )


def _cliente(environ: Environ) -> str | None:
    # The address the lockout and /metrics see, behind our proxies; imported
    # here: this module is imported before Django's settings exist.
    from relatorios.operacao.acesso import cliente

    return cliente(environ).endereco


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
