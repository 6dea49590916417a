"""A job's event stream carries its partial result chunk by chunk, against the
real events process, web server and qcluster (issue 34, section 2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from relatorios.jobs import pedidos
from relatorios.models import Tenant
from tests import helpers, processos
from tests.api.test_eventos import eventos, status_http  # noqa: F401 (the fixture)
from tests.sse import abrir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

TRAVA = 340_002
PARAMS = {"inicio": "2026-01-01", "fim": "2026-03-31", "agrupar": "dia"}


def com_vendas_em_tres_meses(tenant: Tenant) -> None:
    lojas = helpers.criar_lojas(tenant, "L001", "L002")
    vendedor = helpers.criar_vendedor(tenant)
    produto = helpers.criar_produto(tenant)
    for i, (mes, dia) in enumerate(((1, 5), (1, 20), (2, 3), (3, 9))):
        helpers.criar_venda(
            loja=lojas[i % 2],
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime(2026, mes, dia, 15, tzinfo=UTC),
            quantidade=1 + i,
            valor=f"{10 + i}.25",
        )


@pytest.fixture
def trava() -> Iterator[Callable[[], None]]:
    """The advisory lock the test type's later chunks wait for, held by the
    test until it calls the returned function."""
    conexao = psycopg.connect(processos.ambiente()["DATABASE_URL"], autocommit=True)
    conexao.execute("SELECT pg_advisory_lock(%s)", [TRAVA])

    def soltar() -> None:
        conexao.execute("SELECT pg_advisory_unlock_all()")

    yield soltar
    conexao.close()


def test_fluxo_traz_o_resultado_parcial_de_cada_parte(
    tenant: Tenant,
    token: str,
    eventos: Callable[..., str],  # noqa: F811
    cluster: Callable[..., processos.Processo],
    servidor: str,
    trava: Callable[[], None],
) -> None:
    com_vendas_em_tres_meses(tenant)
    url = eventos()
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="teste_vendas_em_espera",
        params_brutos=PARAMS,
        usuario_id=None,
    ).job.id
    fluxo = abrir(f"{url}/relatorios/jobs/{job_id}/eventos", token=token)
    cluster(RELATORIOS_TESTE_TRAVA=str(TRAVA))

    def com_parcial(f: Any) -> Any:
        return [e for e in f.eventos if "resultado_parcial" in e.dados]

    fluxo.esperar(com_parcial, descricao="o quadro da primeira parte")
    primeiro = com_parcial(fluxo)[0].dados
    status = status_http(f"{servidor}/relatorios/jobs/{job_id}", token).json()

    # Held by the lock after its first chunk: the frame is the status read.
    assert primeiro == status
    assert primeiro["status"] == "executando"
    parcial = primeiro["resultado_parcial"]
    assert parcial["partes"] == {"feitas": 1, "total": 3}
    assert parcial["cobre"] == {"inicio": "2026-01-01", "fim": "2026-01-31"}
    assert [
        (lin["periodo"], lin["loja"]) for lin in parcial["resultado"]["linhas"]
    ] == [
        ("2026-01-05", "L001"),
        ("2026-01-20", "L002"),
    ]
    # Nothing in the stream before the first chunk claimed a partial.
    antes = fluxo.eventos[: fluxo.eventos.index(com_parcial(fluxo)[0])]
    assert all("resultado_parcial" not in e.dados for e in antes)

    trava()
    fluxo.esperar(lambda f: f.terminou, descricao="o fim do fluxo no `pronto`")
    final = fluxo.eventos[-1].dados
    assert final["status"] == "pronto"
    assert "resultado_parcial" not in final
    partes = [
        e.dados["resultado_parcial"]["partes"]["feitas"] for e in com_parcial(fluxo)
    ]
    # The later chunk's frame may be read after the job finished (then it has
    # no partial: the `pronto` follows); never an older partial than before.
    assert partes == sorted(partes)
    # Each partial is the start of the final result, to the line.
    linhas_finais = final["resultado"]["linhas"]
    for evento in com_parcial(fluxo):
        linhas = evento.dados["resultado_parcial"]["resultado"]["linhas"]
        assert linhas == linhas_finais[: len(linhas)]
