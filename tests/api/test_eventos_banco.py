"""The events process and its database: a server refusing connections, or
one that stops answering, gets a 503 with Retry-After in time, and the
process recovers by itself when the server is back. A real events process,
through a TCP relay in front of the real PostgreSQL (tests/banco/rele.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from django.db import connection

from relatorios.models import Tenant
from tests import helpers
from tests.api.test_eventos import eventos, submeter  # noqa: F401 (the fixture)
from tests.banco.rele import Rele
from tests.sse import Fluxo, abrir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]


@pytest.fixture
def rele(transactional_db: None) -> Iterator[Rele]:
    rele = Rele(int(connection.settings_dict.get("PORT") or 5432))
    yield rele
    rele.fechar()


def pelo_rele(rele: Rele) -> str:
    banco = connection.settings_dict
    usuario = banco.get("USER") or "postgres"
    return f"postgres://{usuario}@127.0.0.1:{rele.porta}/{banco['NAME']}"


def abrir_com(url: str, token: str) -> httpx.Response:
    return httpx.get(
        f"{url}/relatorios/eventos",
        headers={"Authorization": f"Token {token}"},
        timeout=30,
    )


def test_banco_que_recusa_conexoes_e_503_com_retry_after(
    tenant: Tenant,
    token: str,
    eventos: Callable[..., str],  # noqa: F811
    rele: Rele,
) -> None:
    url = eventos(DATABASE_URL=pelo_rele(rele))
    rele.recusar()

    resposta = abrir_com(url, token)

    assert resposta.status_code == 503
    assert resposta.headers["retry-after"] == "3"
    assert "banco" in resposta.json()["erro"]


def test_banco_mudo_e_503_a_tempo_e_o_processo_volta_sozinho(
    tenant: Tenant,
    token: str,
    eventos: Callable[..., str],  # noqa: F811
    rele: Rele,
) -> None:
    url = eventos(DATABASE_URL=pelo_rele(rele), RELATORIOS_EVENTOS_ESPERA_BANCO_S="2")
    assert abrir(f"{url}/relatorios/eventos", token=token).status == 200
    _, outro = helpers.criar_usuario(tenant)  # never seen: its check reads
    rele.silenciar()

    mudo = abrir_com(url, outro)
    rele.falar()
    novo: Fluxo = helpers.esperar(
        lambda: (
            (f := abrir(f"{url}/relatorios/eventos", token=outro)).status == 200 and f
        ),
        descricao="um fluxo aberto depois da volta do banco",
    )
    job_id = submeter(tenant)

    assert mudo.status_code == 503
    assert mudo.headers["retry-after"] == "3"
    # Live events again: the reader left its black-holed connection.
    novo.esperar(
        lambda f: any(e.dados["data"]["id"] == job_id for e in f.eventos),
        descricao="o evento do job novo",
    )
