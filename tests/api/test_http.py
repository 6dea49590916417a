"""The API over real HTTP (the production server), with real concurrency."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django_q.models import OrmQ

from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from tests import helpers
from tests.processos import Processo, requisitar

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

PEDIDO = json.dumps({"inicio": "2026-01-01", "fim": "2026-03-31"}).encode()


def test_cem_pedidos_identicos_simultaneos_criam_um_job_e_uma_execucao(
    tenant: Tenant, token: str, servidor: str, cluster: Callable[..., Processo]
) -> None:
    n = 100
    barreira = threading.Barrier(n)
    respostas: list[tuple[int, dict[str, str], Any]] = []
    trava = threading.Lock()

    def pedir() -> None:
        barreira.wait()
        resposta = requisitar(
            "POST", f"{servidor}/relatorios/teste_lento", token=token, corpo=PEDIDO
        )
        with trava:
            respostas.append(resposta)

    fios = [threading.Thread(target=pedir) for _ in range(n)]
    for fio in fios:
        fio.start()
    for fio in fios:
        fio.join(120)

    assert len(respostas) == n
    assert {codigo for codigo, _, _ in respostas} == {202}
    ids = {corpo["id"] for _, _, corpo in respostas}
    assert len(ids) == 1
    assert RelatorioJob.objects.count() == 1
    assert OrmQ.objects.count() == 1
    (job_id,) = ids
    assert {cab["Location"] for _, cab, _ in respostas} == {
        f"/relatorios/jobs/{job_id}"
    }

    cluster()
    job = helpers.esperar(
        lambda: (j := helpers.job(job_id)).status == EstadoDoJob.PRONTO and j,
        descricao="job pronto",
    )
    assert job.tentativas == 1


def test_pedido_acompanhado_ate_o_resultado(
    tenant: Tenant, token: str, servidor: str, cluster: Callable[..., Processo]
) -> None:
    cluster()
    codigo, cabecalhos, corpo = requisitar(
        "POST", f"{servidor}/relatorios/teste_lento", token=token, corpo=PEDIDO
    )
    assert codigo == 202
    local = cabecalhos["Location"]

    def pronto() -> Any:
        codigo, _, corpo = requisitar("GET", f"{servidor}{local}", token=token)
        assert codigo == 200
        return corpo if corpo["status"] == "pronto" else None

    final = helpers.esperar(pronto, descricao="status pronto")
    assert final["id"] == corpo["id"]
    assert len(final["resultado"]["partes"]) == 3

    codigo, cabecalhos, repetido = requisitar(
        "POST", f"{servidor}/relatorios/teste_lento", token=token, corpo=PEDIDO
    )
    assert codigo == 200
    assert cabecalhos["Location"] == local
    assert repetido["resultado"] == final["resultado"]


def test_outro_tenant_recebe_404_pela_rede(
    tenant: Tenant, outro_tenant: Tenant, token: str, servidor: str
) -> None:
    _, _, corpo = requisitar(
        "POST", f"{servidor}/relatorios/vendas", token=token, corpo=PEDIDO
    )
    _, token_b = helpers.criar_usuario(outro_tenant)
    codigo, _, erro = requisitar(
        "GET", f"{servidor}/relatorios/jobs/{corpo['id']}", token=token_b
    )
    assert codigo == 404
    assert erro == {"erro": "não encontrado"}
