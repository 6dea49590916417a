"""The production server (config/servidor.py: granian + config/vigia.py), as
real processes over real HTTP: what gunicorn did, what granian does by its
own options, and what config/vigia.py adds.

The server runs tests/wsgi_de_teste.py: the production app plus a view that
sleeps, which exists in no URLconf.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import threading
import time
from collections import Counter
from datetime import datetime
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from tests import processos

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

ALVO = "tests.wsgi_de_teste:application"
COMUM = "/relatorios/jobs/1"  # 401 without a token: the app, no database


def iniciar(pasta_saida: Path, **extras: str) -> tuple[processos.Processo, str]:
    # The server appends to its log: only this run's lines are waited for.
    (pasta_saida / "web.log").unlink(missing_ok=True)
    return processos.iniciar_web(
        pasta_saida / "web.log",
        alvo=ALVO,
        **{"WEB_WORKERS": "2", "WEB_THREADS": "2", **extras},
    )


def porta(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def pedir(
    url: str,
    caminho: str,
    *,
    cabecalhos: dict[str, str] | None = None,
    timeout: float = 30,
) -> tuple[int, bytes, Message]:
    conexao = http.client.HTTPConnection("127.0.0.1", porta(url), timeout=timeout)
    try:
        conexao.request("GET", caminho, headers=cabecalhos or {})
        resposta = conexao.getresponse()
        return resposta.status, resposta.read(), resposta.headers
    finally:
        conexao.close()


def workers(processo: processos.Processo) -> set[int]:
    return set(processos.filhos(processo.pid))


def esperar(condicao: Any, descricao: str, limite_s: float = 60) -> None:
    fim = time.monotonic() + limite_s
    while not condicao():
        if time.monotonic() > fim:
            raise AssertionError(f"esperando {descricao}")
        time.sleep(0.05)


def rss_kb(pid: int) -> int:
    for linha in Path(f"/proc/{pid}/status").read_text().splitlines():
        if linha.startswith("VmRSS:"):
            return int(linha.split()[1])
    return 0


def gauges_vivos(pasta: Path) -> set[int]:
    return {int(f.stem.rsplit("_", 1)[1]) for f in pasta.glob("gauge_live*_*.db")}


def test_pedido_alem_do_timeout_derruba_so_o_seu_worker(pasta_saida: Path) -> None:
    metricas = pasta_saida / "metricas"
    web, url = iniciar(
        pasta_saida, WEB_TIMEOUT_S="6", PROMETHEUS_MULTIPROC_DIR=str(metricas)
    )
    try:
        antes = workers(web)
        assert len(antes) == 2
        # Every web worker has a live gauge (relatorios.operacao.metricas).
        esperar(lambda: gauges_vivos(metricas) == antes, "os gauges dos workers")
        resultado: list[object] = []

        def lento() -> None:
            try:
                resultado.append(
                    pedir(
                        url,
                        "/_teste/dormir?60",
                        cabecalhos={"X-Request-ID": "pedido-lento-1"},
                        timeout=90,
                    )[0]
                )
            except (OSError, http.client.HTTPException) as erro:
                resultado.append(erro)

        fio = threading.Thread(target=lento)
        fio.start()
        esperar(lambda: "dormindo pid=" in web.texto_do_log(), "o pedido lento")
        # Other requests are served while the slow one runs and after its
        # worker is killed (a request caught in flight on that worker at the
        # instant it dies may fail, as with gunicorn).
        contagem: Counter[object] = Counter()
        while fio.is_alive():
            try:
                contagem[pedir(url, COMUM, timeout=30)[0]] += 1
            except (OSError, http.client.HTTPException) as erro:
                contagem[type(erro).__name__] += 1
        fio.join()
        esperar(lambda: len(workers(web) - antes) == 1, "o worker substituto")
        depois = workers(web)
        assert pedir(url, COMUM)[0] == 401
        # The dead worker's live gauge leaves the scrape; the others stay.
        esperar(lambda: gauges_vivos(metricas) == depois, "o gauge do morto sumir")
    finally:
        web.parar()

    assert len(resultado) == 1
    assert not isinstance(resultado[0], int), resultado
    assert contagem[401] >= 10, contagem
    # The request in flight on the dying worker may fail. Without
    # net.ipv4.tcp_migrate_req (the deploy checklist's sysctl; this machine
    # has it off) a connection the kernel had already queued on that worker's
    # own SO_REUSEPORT socket is reset too: a full run on 2026-12-04 saw exactly
    # RemoteDisconnected + ConnectionResetError.
    migra = Path("/proc/sys/net/ipv4/tcp_migrate_req").read_text().strip() == "1"
    falhas = sum(n for chave, n in contagem.items() if chave != 401)
    assert falhas <= (1 if migra else 2), contagem
    assert len(depois) == 2
    assert len(antes & depois) == 1
    log = web.texto_do_log()
    linha = next(li for li in log.splitlines() if "excedeu o timeout" in li)
    assert "request_id=pedido-lento-1" in linha
    assert "caminho=/_teste/dormir" in linha
    assert "evento=timeout_do_pedido" in linha
    assert "crash loop" not in log


def test_sigterm_termina_o_pedido_em_curso_e_sai(pasta_saida: Path) -> None:
    # A setting of before granian's lifetime: warned about, not fatal.
    web, url = iniciar(pasta_saida, WEB_MAX_REQUESTS="40")
    resultado: list[object] = []

    def lento() -> None:
        try:
            resultado.append(pedir(url, "/_teste/dormir?3", timeout=60)[:2])
        except (OSError, http.client.HTTPException) as erro:
            resultado.append(erro)

    fio = threading.Thread(target=lento)
    fio.start()
    try:
        esperar(lambda: "dormindo pid=" in web.texto_do_log(), "o pedido lento")
        web.sinal(signal.SIGTERM, grupo=False)
        fio.join(60)
        codigo = web.popen.wait(60)
    finally:
        web.matar()
    assert resultado == [(200, b"acordei")]
    assert codigo == 0
    log = web.texto_do_log()
    assert "Granian shutdown completed" in log
    assert "WEB_MAX_REQUESTS is no longer used" in log


class Carga:
    """Keep-alive and new-connection clients until told to stop, counting
    every answer and every failure (a status, or the exception's name)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.contagem: Counter[object] = Counter()
        self._trava = threading.Lock()
        self._parar = threading.Event()
        # A short pause between requests: a pooled connection sits idle now
        # and then, as a proxy's or a client library's does.
        self._pausa_s = 0.01
        self._fios = [threading.Thread(target=self._mantida) for _ in range(4)]
        self._fios += [threading.Thread(target=self._nova) for _ in range(2)]

    def __enter__(self) -> Carga:
        for fio in self._fios:
            fio.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._parar.set()
        for fio in self._fios:
            fio.join(60)

    def _contar(self, chave: object) -> None:
        with self._trava:
            self.contagem[chave] += 1

    def _mantida(self) -> None:
        conexao = None
        while not self._parar.wait(self._pausa_s):
            try:
                if conexao is None:
                    conexao = http.client.HTTPConnection(
                        "127.0.0.1", porta(self.url), timeout=30
                    )
                conexao.request("GET", COMUM)
                resposta = conexao.getresponse()
                resposta.read()
                self._contar(resposta.status)
                if resposta.will_close:
                    conexao.close()
                    conexao = None
            except (OSError, http.client.HTTPException) as erro:
                self._contar(type(erro).__name__)
                conexao = None

    def _nova(self) -> None:
        while not self._parar.wait(self._pausa_s):
            try:
                self._contar(pedir(self.url, COMUM)[0])
            except (OSError, http.client.HTTPException) as erro:
                self._contar(type(erro).__name__)


def test_substituicao_por_idade_e_por_sighup_sem_falhar_pedido_sob_carga(
    pasta_saida: Path,
) -> None:
    """granian replaces workers itself (lifetime, SIGHUP), successor first;
    config/vigia.py drains the old one first, so no keep-alive client meets
    a connection closed under its request."""
    web, url = iniciar(pasta_saida, WEB_WORKER_LIFETIME_S="60")
    primeiros = workers(web)
    try:
        with Carga(url) as carga:
            # granian's first lifetime tick: 60 s after the start.
            esperar(
                lambda: len(workers(web)) == 2 and not primeiros & workers(web),
                "a substituição dos dois primeiros workers por idade",
                limite_s=120,
            )
            por_idade = workers(web)
            web.sinal(signal.SIGHUP, grupo=False)
            esperar(
                lambda: len(workers(web)) == 2 and not por_idade & workers(web),
                "a substituição pelo SIGHUP",
            )
            # The last successor serves under load too.
            time.sleep(2)
    finally:
        web.parar()
    contagem = carga.contagem
    assert set(contagem) == {401}, contagem
    assert contagem[401] >= 100, contagem
    log = web.texto_do_log()
    assert log.count("lifetime expired, gracefully respawning") == 2, log
    assert "HUP signal received" in log
    # Each first worker drained before its lifetime replacement.
    assert log.count("evento=dreno motivo=vida") == 2, log
    assert mortos_a_forca(log) == [], log
    assert "crash loop" not in log


_LINHA = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*(Stopping|Killing) (?:old )?(worker-\d+)"
)


def mortos_a_forca(log: str) -> list[str]:
    """The workers granian killed because they did not stop in time.

    granian logs "Killing old worker-N after it refused to gracefully stop"
    also when the worker was already exiting: `join` returns once the worker
    closed its file descriptors, and granian gives the kernel 1 ms to turn it
    into a zombie, which a loaded two-core host may take longer for (seen in a
    full run on 2026-12-04: killed 15 ms after "Stopping old worker-1", 20 s
    before WEB_GRACEFUL_TIMEOUT_S). A worker that really refused is killed
    only after the graceful timeout.
    """
    parado_em: dict[str, datetime] = {}
    mortos = []
    for m in _LINHA.finditer(log):
        quando = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f")
        if m[2] == "Stopping":
            parado_em[m[3]] = quando
            continue
        parada = parado_em.get(m[3])
        if parada is None or (quando - parada).total_seconds() >= 1:
            mortos.append(m[0])
    return mortos


def test_clientes_lentos_nao_bloqueiam_os_outros(pasta_saida: Path) -> None:
    web, url = iniciar(pasta_saida)
    lentos = []
    try:
        # Far more clients than the 2 x 2 Python threads, each sending its
        # request line a few bytes at a time: HTTP is read in Rust, no
        # Python thread waits on them.
        for _ in range(20):
            cliente = socket.create_connection(("127.0.0.1", porta(url)))
            cliente.sendall(b"GET " + COMUM.encode())
            lentos.append(cliente)
        for _ in range(20):
            for cliente in lentos:
                cliente.sendall(b"?")
            assert pedir(url, COMUM, timeout=10)[0] == 401
    finally:
        for cliente in lentos:
            cliente.close()
        web.parar()


def test_corpo_enorme_e_recusado_sem_crescer_a_memoria(pasta_saida: Path) -> None:
    web, url = iniciar(pasta_saida)
    try:
        pedir(url, COMUM)
        antes = sum(rss_kb(pid) for pid in workers(web))
        bloco = b" " * (1024 * 1024)
        # Declared: refused from Content-Length (413) before a byte is read.
        # Chunked, no length: Django reads none of it (the app's 400).
        for cabecalho, declarado in (
            (b"Content-Length: %d\r\n" % (1 << 30), 413),
            (b"Transfer-Encoding: chunked\r\n", 400),
        ):
            cliente = socket.create_connection(("127.0.0.1", porta(url)), timeout=30)
            cliente.sendall(
                b"POST /relatorios/vendas HTTP/1.1\r\nHost: x\r\n"
                b"Authorization: Token nao-existe\r\n"
                b"Content-Type: application/json\r\n" + cabecalho + b"\r\n"
            )
            enviados = 0
            try:
                while enviados < 200:
                    if b"chunked" in cabecalho:
                        cliente.sendall(b"%x\r\n%s\r\n" % (len(bloco), bloco))
                    else:
                        cliente.sendall(bloco)
                    enviados += 1
            except OSError:
                pass  # the server answered and closed: the rest is never read
            resposta = cliente.recv(65536)
            cliente.close()
            codigo = int(resposta.split(b" ", 2)[1])
            # The token is checked after the body's size, so 413 comes first;
            # for the chunked body the token is what fails (401).
            assert codigo in (declarado, 401), resposta[:200]
            assert enviados < 200 or codigo == 401
        depois = sum(rss_kb(pid) for pid in workers(web))
        assert pedir(url, COMUM)[0] == 401
    finally:
        web.parar()
    # Up to 400 MiB offered; the workers grew by far less than one body.
    assert depois - antes < 64 * 1024, (antes, depois)


def test_linha_de_acesso_em_json_com_os_campos_do_projeto(
    pasta_saida: Path,
) -> None:
    web, url = iniciar(pasta_saida, LOG_FORMAT="json", WEB_ACCESSLOG="-")
    try:
        codigo, _, cabecalhos = pedir(
            url, COMUM + "?x=1", cabecalhos={"X-Request-ID": "acesso-1"}
        )
    finally:
        web.parar()
    assert codigo == 401
    assert cabecalhos["X-Request-ID"] == "acesso-1"
    linhas = [
        json.loads(li) for li in web.texto_do_log().splitlines() if li.startswith("{")
    ]
    acesso = next(li for li in linhas if li.get("request_id") == "acesso-1")
    assert acesso["evento"] == "acesso"
    assert acesso["logger"] == "relatorios.acesso"
    assert (acesso["metodo"], acesso["caminho"], acesso["status"]) == (
        "GET",
        COMUM,
        "401",
    )
    assert acesso["remoto"] == "127.0.0.1"
    assert isinstance(acesso["bytes"], int)
    assert acesso["bytes"] > 0
    assert isinstance(acesso["duracao_ms"], float)
    assert {"ts", "nivel", "pid", "msg"} <= set(acesso)
    # granian's own lines come through the same formatter.
    assert any(li.get("logger") == "_granian" for li in linhas)


def test_configuracao_padrao_e_um_worker_por_cpu_mais_um(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spare worker: with one per CPU, SO_REUSEPORT's hashing often piled
    the keep-alive connections on one GIL-bound worker
    (docs/historico/benchmarks.md)."""
    import os

    from config.servidor import Configuracao

    for nome in (
        "WEB_WORKERS",
        "GUNICORN_WORKERS",
        "WEB_THREADS",
        "WEB_TIMEOUT_S",
        "WEB_WORKER_LIFETIME_S",
        "WEB_WORKER_MAX_RSS_MB",
        "WEB_RESPAWN_INTERVAL_S",
    ):
        monkeypatch.delenv(nome, raising=False)
    conf = Configuracao.do_ambiente()
    assert conf.workers == len(os.sched_getaffinity(0)) + 1
    assert conf.threads == 2
    assert (conf.vida_s, conf.rss_mb, conf.intervalo_s) == (3600, None, 5.0)
    monkeypatch.setenv("WEB_WORKERS", "5")
    monkeypatch.setenv("WEB_WORKER_LIFETIME_S", "0")
    monkeypatch.setenv("WEB_WORKER_MAX_RSS_MB", "512")
    conf = Configuracao.do_ambiente()
    assert (conf.workers, conf.vida_s, conf.rss_mb) == (5, None, 512)
    # granian refuses a lifetime under 60 s: said at once, by name.
    monkeypatch.setenv("WEB_WORKER_LIFETIME_S", "30")
    with pytest.raises(ValueError, match="WEB_WORKER_LIFETIME_S"):
        Configuracao.do_ambiente()
    monkeypatch.setenv("WEB_WORKER_LIFETIME_S", "60")
    monkeypatch.setenv("WEB_TIMEOUT_S", "5")
    with pytest.raises(ValueError, match="WEB_TIMEOUT_S"):
        Configuracao.do_ambiente()
