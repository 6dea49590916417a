from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from django.urls import clear_url_caches, get_resolver

from config import servidor, vigia


@pytest.fixture
def descongelar() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_worker_congela_o_que_carregou_antes_de_servir(
    monkeypatch: pytest.MonkeyPatch, descongelar: None
) -> None:
    monkeypatch.setattr(vigia.Vigia, "iniciar", lambda self: None)
    gc.unfreeze()
    clear_url_caches()
    conf = servidor.Configuracao(
        host="127.0.0.1",
        porta=0,
        workers=1,
        threads=1,
        timeout_s=30,
        graceful_timeout_s=5,
        vida_s=None,
        rss_mb=None,
        intervalo_s=5.0,
        acesso=False,
    )

    servidor.carregar("tests.wsgi_de_teste:application", conf)

    assert gc.get_freeze_count() > 10_000
    # The URLconf was loaded before the freeze, not by the first request.
    assert "url_patterns" in vars(get_resolver())
    assert gc.isenabled()
