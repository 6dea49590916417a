"""config/vigia.py alone: the watchdog's decision, the request budget, the
access line. The same pieces under real processes: tests/config/test_servidor.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.http import HttpResponse, StreamingHttpResponse

from config import vigia


@pytest.fixture(autouse=True)
def sem_dreno() -> Iterator[None]:
    vigia.ESTADO.drenando = False
    yield
    vigia.ESTADO.drenando = False


def chamar(app: Any, caminho: str = "/x", **environ: str) -> tuple[list[Any], bytes]:
    respostas: list[Any] = []

    def start_response(status: str, cabecalhos: list[tuple[str, str]]) -> None:
        respostas.append((status, cabecalhos))

    corpo = app(
        {"PATH_INFO": caminho, "REQUEST_METHOD": "GET", "REMOTE_ADDR": "10.0.0.1"}
        | environ,
        start_response,
    )
    dados = b"".join(corpo)
    fechar = getattr(corpo, "close", None)
    if fechar is not None:
        fechar()
    return respostas, dados


def django(corpo: bytes = b"ok") -> Any:
    def app(environ: dict[str, Any], start_response: Any) -> HttpResponse:
        resposta = HttpResponse(corpo)
        start_response("200 OK", list(resposta.items()))
        return resposta

    return app


def test_pedido_alem_do_timeout_encerra_o_processo_nomeando_o_pedido(
    caplog: pytest.LogCaptureFixture,
) -> None:
    saidas: list[int] = []
    travado: dict[str, Any] = {}

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        travado["agora"] = environ["X_AGORA"]
        # The watchdog runs while the request is in flight.
        w.verificar(environ["X_AGORA"] + 5)
        assert saidas == []
        w.verificar(environ["X_AGORA"] + 31)
        start_response("200 OK", [])
        return [b""]

    w = vigia.Vigia(app, timeout_s=30, sair=saidas.append)
    import time

    with caplog.at_level(logging.ERROR, logger="relatorios.servidor"):
        chamar(
            w,
            "/relatorios/vendas",
            HTTP_X_REQUEST_ID="abc-123",
            X_AGORA=time.monotonic(),  # type: ignore[arg-type]
        )
    assert saidas == [1]
    registro = next(r for r in caplog.records if r.name == "relatorios.servidor")
    assert registro.caminho == "/relatorios/vendas"  # type: ignore[attr-defined]
    assert registro.request_id == "abc-123"  # type: ignore[attr-defined]
    assert registro.evento == "timeout_do_pedido"  # type: ignore[attr-defined]
    # Done requests leave the watchdog's table.
    saidas.clear()
    w.verificar(time.monotonic() + 1000)
    assert saidas == []


def test_apos_n_pedidos_pede_a_reciclagem_uma_vez_e_fecha_as_conexoes() -> None:
    pedidos: list[int] = []
    w = vigia.Vigia(
        django(),
        timeout_s=30,
        max_pedidos=10,
        pedir_reciclagem=lambda: pedidos.append(1),
    )
    assert 10 <= w.limite <= 11
    cabecalhos = []
    for _ in range(30):
        respostas, corpo = chamar(w)
        assert corpo == b"ok"
        cabecalhos.append(dict(respostas[0][1]).get("Connection"))
    assert pedidos == [1]
    assert cabecalhos[: w.limite - 1] == [None] * (w.limite - 1)
    assert set(cabecalhos[w.limite - 1 :]) == {"close"}


def test_sinal_de_drenar_fecha_as_conexoes() -> None:
    w = vigia.Vigia(django(), timeout_s=30)
    assert "Connection" not in dict(chamar(w)[0][0][1])
    vigia._ao_sinal_de_drenar(0, None)
    assert dict(chamar(w)[0][0][1])["Connection"] == "close"


def test_request_id_do_cliente_ou_novo_e_o_mesmo_na_linha_de_acesso(
    caplog: pytest.LogCaptureFixture,
) -> None:
    vistos: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> HttpResponse:
        vistos.append(environ["HTTP_X_REQUEST_ID"])
        return django(b"abcd")(environ, start_response)

    w = vigia.Vigia(app, timeout_s=30)
    with caplog.at_level(logging.INFO, logger="relatorios.acesso"):
        chamar(w, "/a", HTTP_X_REQUEST_ID="cliente-1")
        chamar(w, "/b", HTTP_X_REQUEST_ID="não vale")
    assert vistos[0] == "cliente-1"
    assert len(vistos[1]) == 32
    linhas = [r for r in caplog.records if r.name == "relatorios.acesso"]
    assert [r.request_id for r in linhas] == vistos  # type: ignore[attr-defined]
    primeira = linhas[0]
    assert primeira.getMessage() == "GET /a 200"
    assert (primeira.evento, primeira.status, primeira.bytes) == (  # type: ignore[attr-defined]
        "acesso",
        "200",
        4,
    )
    assert primeira.remoto == "10.0.0.1"  # type: ignore[attr-defined]


def test_resposta_em_fluxo_termina_no_close(caplog: pytest.LogCaptureFixture) -> None:
    def app(environ: dict[str, Any], start_response: Any) -> StreamingHttpResponse:
        resposta = StreamingHttpResponse(iter([b"a", b"bc"]))
        start_response("200 OK", list(resposta.items()))
        return resposta

    w = vigia.Vigia(app, timeout_s=30)
    with caplog.at_level(logging.INFO, logger="relatorios.acesso"):
        _, corpo = chamar(w)
    assert corpo == b"abc"
    (linha,) = [r for r in caplog.records if r.name == "relatorios.acesso"]
    assert linha.bytes == 3  # type: ignore[attr-defined]
    assert w._em_curso == {}


def test_excecao_da_app_registra_500_e_sobe() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raise RuntimeError("bug")

    w = vigia.Vigia(app, timeout_s=30)
    with pytest.raises(RuntimeError):
        chamar(w)
    assert w._em_curso == {}
