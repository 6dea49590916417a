"""config/vigia.py alone: the watchdog's decisions (timeout, draining before
a replacement), the access line. The same pieces under real processes:
tests/config/test_servidor.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.http import HttpResponse, StreamingHttpResponse
from django.urls import reverse

from config import logs, vigia
from relatorios.notificacoes import links


@pytest.fixture(autouse=True)
def sem_dreno() -> Iterator[None]:
    vigia.ESTADO.drenando = False
    yield
    vigia.ESTADO.drenando = False


def fecha(w: vigia.Vigia) -> bool:
    """Whether the next answer tells the client to close its connection."""
    return dict(chamar(w)[0][0][1]).get("Connection") == "close"


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


def test_perto_do_fim_da_vida_fecha_as_conexoes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = vigia.Vigia(django(), timeout_s=30, fim_da_vida=1000.0)
    with caplog.at_level(logging.INFO, logger="relatorios.servidor"):
        w.avaliar_o_fim(1000.0 - vigia.DRENO_ANTES_DO_FIM_S - 0.5)
        assert not fecha(w)
        for agora in (1000.0 - vigia.DRENO_ANTES_DO_FIM_S, 1001.0, 1030.0):
            w.avaliar_o_fim(agora)
            assert fecha(w)
    (linha,) = [r for r in caplog.records if getattr(r, "evento", "") == "dreno"]
    assert linha.motivo == "vida"  # type: ignore[attr-defined]


def test_memoria_acima_do_limite_fecha_as_conexoes_enquanto_durar() -> None:
    rss = [100, 200, 150]
    w = vigia.Vigia(django(), timeout_s=30, rss_max=200, ler_rss=lambda: rss[0])
    decisoes = []
    for valor in rss[:]:
        rss[0] = valor
        w.avaliar_o_fim(0.0)
        decisoes.append(fecha(w))
    # granian replaces a worker only if a sample finds it over the limit.
    assert decisoes == [False, True, False]


def test_rss_atual_e_o_do_processo() -> None:
    status = Path("/proc/self/status").read_text()
    vmrss_kb = int(
        next(li for li in status.splitlines() if li.startswith("VmRSS:")).split()[1]
    )
    assert abs(vigia.rss_atual() - vmrss_kb * 1024) < 16 * 1024 * 1024


def test_timeout_durante_a_substituicao_fica_para_o_fim_do_worker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An exit while granian replaces the worker would look like a crash
    loop to granian (which then stops the whole server)."""
    import time

    saidas: list[int] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        agora = time.monotonic()
        vigia.ESTADO.drenando = True
        w.verificar(agora + 31)
        w.verificar(agora + 32)
        assert saidas == []
        # A drain that ends (memory back under the limit): the timeout acts.
        vigia.ESTADO.drenando = False
        w.verificar(agora + 33)
        start_response("200 OK", [])
        return [b""]

    w = vigia.Vigia(app, timeout_s=30, sair=saidas.append)
    with caplog.at_level(logging.ERROR, logger="relatorios.servidor"):
        chamar(w, "/lento", HTTP_X_REQUEST_ID="lento-1")
    assert saidas == [1]
    linhas = [r for r in caplog.records if r.name == "relatorios.servidor"]
    assert [r.request_id for r in linhas] == ["lento-1", "lento-1"]  # type: ignore[attr-defined]
    assert "substituição" in linhas[0].getMessage()
    assert "encerrado" in linhas[1].getMessage()


def test_sinal_de_drenar_fecha_as_conexoes() -> None:
    w = vigia.Vigia(django(), timeout_s=30)
    assert not fecha(w)
    vigia._ao_sinal_de_drenar(0, None)
    assert fecha(w)


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


# A scheduled report's download link carries a 7-day bearer token in its path
# (relatorios/notificacoes/links.py): no line of ours writes it.
TOKEN = links.assinar(
    job_id=1, tenant_id=1, concluido_em=datetime(2026, 1, 1, tzinfo=UTC)
)


def test_linha_de_acesso_nao_escreve_o_token_do_download(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = vigia.Vigia(django(), timeout_s=30)
    with caplog.at_level(logging.INFO, logger="relatorios.acesso"):
        chamar(w, f"/baixar/{TOKEN}")
    (linha,) = [r for r in caplog.records if r.name == "relatorios.acesso"]
    assert linha.getMessage() == "GET /baixar/*** 200"
    assert linha.caminho == "/baixar/***"  # type: ignore[attr-defined]
    assert TOKEN not in str(vars(linha))


def test_linha_do_timeout_nao_escreve_o_token_do_download(
    caplog: pytest.LogCaptureFixture,
) -> None:
    saidas: list[int] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        w.verificar(environ["X_AGORA"] + 31)
        start_response("200 OK", [])
        return [b""]

    w = vigia.Vigia(app, timeout_s=30, sair=saidas.append)
    import time

    with caplog.at_level(logging.ERROR, logger="relatorios.servidor"):
        chamar(w, f"/baixar/{TOKEN}", X_AGORA=time.monotonic())  # type: ignore[arg-type]
    assert saidas == [1]
    registro = next(r for r in caplog.records if r.name == "relatorios.servidor")
    assert registro.caminho == "/baixar/***"  # type: ignore[attr-defined]
    assert TOKEN not in str(vars(registro))


def test_o_prefixo_escondido_e_o_da_rota_do_download() -> None:
    assert reverse("baixar", args=[TOKEN]).startswith(logs.PREFIXO_DE_DOWNLOAD)
    assert logs.caminho_para_o_log(f"GET /baixar/{TOKEN}?x=1 200") == (
        "GET /baixar/***?x=1 200"
    )
