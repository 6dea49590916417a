"""The production server (config/servidor.py: granian + config/vigia.py), as
real processes over real HTTP: what gunicorn did and granian needed help for.

The server runs tests/wsgi_de_teste.py: the production app plus a view that
sleeps, which exists in no URLconf.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import threading
import time
from collections import Counter
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


def test_pedido_alem_do_timeout_derruba_so_o_seu_worker(pasta_saida: Path) -> None:
    web, url = iniciar(pasta_saida, WEB_TIMEOUT_S="6")
    try:
        antes = workers(web)
        assert len(antes) == 2
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
    finally:
        web.parar()

    assert len(resultado) == 1
    assert not isinstance(resultado[0], int), resultado
    assert contagem[401] >= 10, contagem
    assert sum(n for chave, n in contagem.items() if chave != 401) <= 1, contagem
    assert len(depois) == 2
    assert len(antes & depois) == 1
    log = web.texto_do_log()
    linha = next(li for li in log.splitlines() if "excedeu o timeout" in li)
    assert "request_id=pedido-lento-1" in linha
    assert "caminho=/_teste/dormir" in linha
    assert "evento=timeout_do_pedido" in linha
    assert "crash loop" not in log


def test_sigterm_termina_o_pedido_em_curso_e_sai(pasta_saida: Path) -> None:
    web, url = iniciar(pasta_saida)
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
    assert "Granian shutdown completed" in web.texto_do_log()


def test_reciclagem_apos_n_pedidos_sem_falhar_pedido_sob_carga(
    pasta_saida: Path,
) -> None:
    web, url = iniciar(pasta_saida, WEB_MAX_REQUESTS="40")
    antes = workers(web)
    contagem: Counter[object] = Counter()
    trava = threading.Lock()
    total = 800

    def contar(chave: object) -> bool:
        with trava:
            contagem[chave] += 1
            return sum(contagem.values()) < total

    def mantida() -> None:  # keep-alive, as a proxy or a client library
        conexao = None
        continuar = True
        while continuar:
            try:
                if conexao is None:
                    conexao = http.client.HTTPConnection(
                        "127.0.0.1", porta(url), timeout=30
                    )
                conexao.request("GET", COMUM)
                resposta = conexao.getresponse()
                resposta.read()
                continuar = contar(resposta.status)
                if resposta.will_close:
                    conexao.close()
                    conexao = None
            except (OSError, http.client.HTTPException) as erro:
                continuar = contar(type(erro).__name__)
                conexao = None

    def nova() -> None:  # a new connection per request
        continuar = True
        while continuar:
            try:
                continuar = contar(pedir(url, COMUM)[0])
            except (OSError, http.client.HTTPException) as erro:
                continuar = contar(type(erro).__name__)

    fios = [threading.Thread(target=mantida) for _ in range(4)]
    fios += [threading.Thread(target=nova) for _ in range(2)]
    try:
        for fio in fios:
            fio.start()
        for fio in fios:
            fio.join(300)
        # Both first workers asked to go; the last replacement may still be
        # under way when the load ends.
        esperar(
            lambda: len(workers(web)) == 2 and not antes & workers(web),
            "a substituição dos dois primeiros workers",
        )
    finally:
        web.parar()
    assert set(contagem) == {401}, contagem
    log = web.texto_do_log()
    # Each first worker was replaced while the load ran (a replaced worker
    # serves on until its successor is ready, so more may not fit in it).
    assert log.count("atingiu o limite de pedidos: substituindo") >= 2
    assert "did not stop" not in log


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
    the keep-alive connections on one GIL-bound worker (docs/benchmarks.md)."""
    import os

    from config.servidor import Configuracao

    for nome in (
        "WEB_WORKERS",
        "GUNICORN_WORKERS",
        "WEB_THREADS",
        "WEB_TIMEOUT_S",
        "WEB_MAX_REQUESTS",
        "GUNICORN_MAX_REQUESTS",
    ):
        monkeypatch.delenv(nome, raising=False)
    conf = Configuracao.do_ambiente()
    assert conf.workers == len(os.sched_getaffinity(0)) + 1
    assert conf.threads == 2
    assert conf.max_pedidos == 100_000
    monkeypatch.setenv("WEB_WORKERS", "5")
    assert Configuracao.do_ambiente().workers == 5
    monkeypatch.setenv("WEB_TIMEOUT_S", "5")
    with pytest.raises(ValueError, match="WEB_TIMEOUT_S"):
        Configuracao.do_ambiente()
