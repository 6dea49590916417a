"""A running job's status shows the chunks done so far, combined by the type's
own `combinar` (issue 34, section 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from relatorios import tipos
from relatorios.jobs import ciclo, execucao, pedidos
from relatorios.jobs.ciclo import Tentativa
from relatorios.tipos.base import Contexto
from tests import helpers, processos

pytestmark = pytest.mark.django_db

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-03-31", "agrupar": "dia"}


@pytest.fixture
def cliente(token: str) -> Client:
    return helpers.cliente_com_token(token)


def com_vendas_em_tres_meses(tenant: Any) -> None:
    l1, l2 = helpers.criar_lojas(tenant, "L001", "L002")
    vendedor = helpers.criar_vendedor(tenant)
    produto = helpers.criar_produto(tenant)
    for loja, mes, valor in ((l1, 1, "10.50"), (l2, 1, "7.25"), (l1, 2, "3.00")):
        helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime(2026, mes, 10, 15, tzinfo=UTC),
            quantidade=1,
            valor=valor,
        )


class Ate(execucao.Acompanhamento):
    """The worker's checkpoint of the first `n` chunks, then a stop."""

    def __init__(self, tentativa: Tentativa, n: int) -> None:
        self.tentativa = tentativa
        self.n = n

    def parte_pronta(self, feitas: int, partes: list[Any], parcial: Any) -> None:
        assert ciclo.registrar_progresso(
            tentativa=self.tentativa,
            progresso=feitas * 100 // len(partes),
            partes=partes,
            feitas=feitas,
            parcial=parcial,
        )
        if feitas == self.n:
            raise execucao.Interrompido("parado pelo teste")


def executar_ate(tenant: Any, job_id: int, n: int) -> None:
    job = ciclo.reivindicar(job_id=job_id)
    assert job is not None
    with pytest.raises(execucao.Interrompido):
        execucao.calcular(
            tipos.obter(job.tipo),
            Contexto(job_id=job_id, tenant_id=tenant.pk, fuso_horario="UTC"),
            job.params,
            timeout_s=60,
            acompanhamento=Ate(job.tentativa, n),
        )


def resultado_completo(tenant: Any, params: dict[str, Any]) -> dict[str, Any]:
    tipo = tipos.obter("vendas")
    ctx = Contexto(job_id=0, tenant_id=tenant.pk, fuso_horario="UTC")
    return execucao.calcular(tipo, ctx, params, timeout_s=60)


def submeter(tenant: Any) -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id


def test_status_executando_traz_as_partes_prontas_combinadas(
    cliente: Client, tenant: Any
) -> None:
    com_vendas_em_tres_meses(tenant)
    job_id = submeter(tenant)
    executar_ate(tenant, job_id, 2)

    corpo = cliente.get(f"/relatorios/jobs/{job_id}").json()

    assert corpo["status"] == "executando"
    assert corpo["progresso"] == 66
    parcial = corpo["resultado_parcial"]
    assert parcial["partes"] == {"feitas": 2, "total": 3}
    assert parcial["cobre"] == {"inicio": "2026-01-01", "fim": "2026-02-28"}
    # The first two months of what the whole report computes, to the byte.
    final = resultado_completo(tenant, helpers.job(job_id).params)
    assert parcial["resultado"] == {
        "agrupar": "dia",
        "linhas": [lin for lin in final["linhas"] if lin["periodo"] < "2026-03"],
        "totais": {"vendas": 3, "quantidade": 3, "receita": "20.75"},
    }


def test_sem_parte_pronta_o_status_e_o_de_antes(cliente: Client, tenant: Any) -> None:
    job_id = submeter(tenant)
    assert ciclo.reivindicar(job_id=job_id) is not None

    corpo = cliente.get(f"/relatorios/jobs/{job_id}").json()

    assert corpo == {
        "id": job_id,
        "status": "executando",
        "progresso": 0,
        "tentativas": 1,
        "proxima_tentativa_em": None,
    }


def test_pronto_nao_traz_parcial(cliente: Client, tenant: Any) -> None:
    com_vendas_em_tres_meses(tenant)
    job_id = submeter(tenant)
    execucao.executar(job_id=job_id)

    corpo = cliente.get(f"/relatorios/jobs/{job_id}").json()

    assert corpo["status"] == "pronto"
    assert "resultado_parcial" not in corpo
    assert (
        not connection.cursor()
        .execute("SELECT 1 FROM relatorio_parciais WHERE job_id = %s", [job_id])
        .fetchall()
    )


def test_desligado_o_status_e_o_de_antes(
    cliente: Client, tenant: Any, settings: Any
) -> None:
    settings.RELATORIOS_RESULTADO_PARCIAL = False
    com_vendas_em_tres_meses(tenant)
    job_id = submeter(tenant)
    executar_ate(tenant, job_id, 1)

    corpo = cliente.get(f"/relatorios/jobs/{job_id}").json()

    assert corpo == {
        "id": job_id,
        "status": "executando",
        "progresso": 33,
        "tentativas": 1,
        "proxima_tentativa_em": None,
    }


def test_parcial_de_outro_tenant_e_404(
    tenant: Any, outro_tenant: Any, cliente: Client
) -> None:
    com_vendas_em_tres_meses(outro_tenant)
    job_id = submeter(outro_tenant)
    executar_ate(outro_tenant, job_id, 1)

    resposta = cliente.get(f"/relatorios/jobs/{job_id}")

    assert resposta.status_code == 404
    assert "resultado_parcial" not in resposta.content.decode()


def test_fechamento_parcial_nao_tem_trecho_do_periodo(
    cliente: Client, tenant: Any
) -> None:
    com_vendas_em_tres_meses(tenant)
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="fechamento",
        params_brutos={"inicio": "2026-02-01", "fim": "2026-02-28"},
        usuario_id=None,
    ).job.id
    executar_ate(tenant, job_id, 1)

    parcial = cliente.get(f"/relatorios/jobs/{job_id}").json()["resultado_parcial"]

    assert parcial["partes"] == {"feitas": 1, "total": 3}
    assert parcial["cobre"] is None
    assert parcial["resultado"]["totais"]["receita"] == "3.00"
    assert "devolucoes" not in parcial["resultado"]["totais"]


@pytest.mark.parametrize("valor", ["talvez", "ture", "2"])
def test_interruptor_invalido_nao_sobe(valor: str) -> None:
    resultado = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=processos.RAIZ,
        env={**os.environ, "RELATORIOS_RESULTADO_PARCIAL": valor},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert resultado.returncode != 0
    assert "RELATORIOS_RESULTADO_PARCIAL" in resultado.stderr
    assert "is not a switch" in resultado.stderr
