"""The soak's ERP writers and its recomputation check (tests/caos/erp.py)
catch what they claim to, on planted data in the real database."""

from __future__ import annotations

import io
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db.models import F

from relatorios import tipos
from relatorios.models import RelatorioJob, Tenant, Venda
from relatorios.models.erp import Devolucao
from tests import helpers, processos
from tests.caos import erp, invariantes
from tests.caos.amostras import Amostras
from tests.caos.carga import Soak
from tests.caos.implantacao import Implantacao
from tests.caos.parametros import Parametros

PARAMS = {"inicio": "2026-01-01", "fim": "2026-02-28", "agrupar": "mes"}


@pytest.fixture
def url(transactional_db: None) -> str:
    """The test database's URL: the check reads it on a connection of its own."""
    return processos.ambiente()["DATABASE_URL"]


def colheita(tmp_path: Path, url: str) -> invariantes.Colheita:
    p = Parametros(duracao_s=60, semente=1, saida=tmp_path)
    impl = Implantacao(p, url=url)
    return invariantes.Colheita(
        p=p,
        impl=impl,
        soak=Soak(impl, 1),
        falhas=[],
        amostras=Amostras(),
        marcos=invariantes.Marcos(0.0, 12.0, 60.0, 70.0, 5.0),
    )


def com_dados(seed: int) -> Tenant:
    tenant = helpers.criar_tenant()
    call_command(
        "gerar_dados",
        tenant=tenant.pk,
        lojas=3,
        vendas=400,
        produtos=5,
        inicio="2026-01-01",
        dias=120,
        seed=seed,
        stdout=io.StringIO(),
    )
    return tenant


def pronto(tenant: Tenant, chave: str, resultado: Any) -> RelatorioJob:
    params = tipos.obter("vendas").normalizar(PARAMS)
    return RelatorioJob.objects.create(
        chave=chave,
        tenant=tenant,
        tipo="vendas",
        params=params,
        status="pronto",
        resultado=resultado,
    )


def recalculado(tenant: Tenant) -> Any:
    return erp.recalcular(
        tipo="vendas",
        tenant_id=tenant.pk,
        fuso=tenant.fuso_horario,
        params=tipos.obter("vendas").normalizar(PARAMS),
    )


def test_resultado_velho_criado_depois_das_escritas_e_contado(
    url: str, tmp_path: Path
) -> None:
    tenant = com_dados(3)
    antes_da_escrita = recalculado(tenant)
    durante = pronto(tenant, "durante", antes_da_escrita)
    venda = Venda.objects.filter(tenant=tenant).order_by("data_hora", "id").first()
    assert venda is not None
    Venda.objects.filter(pk=venda.pk).update(valor=F("valor") + 1)
    c = colheita(tmp_path, url)
    c.soak.erp.parou_em = time.time()
    time.sleep(0.01)
    velho = pronto(tenant, "velho", antes_da_escrita)
    pronto(tenant, "novo", recalculado(tenant))

    diferentes, sem_amostra = erp.recomputacao(c)

    # The job created while the writers ran is not judged; of the two after
    # them, the one holding the number from before the write is counted.
    assert (diferentes.valor, sem_amostra.valor) == (1, 0)
    assert diferentes.exemplos[0].startswith(f"job {velho.pk} ")
    assert f"job {durante.pk} " not in " ".join(diferentes.exemplos)
    assert "2 compared" in diferentes.prova


def test_sem_relatorio_depois_das_escritas_a_checagem_diz_que_nao_julgou(
    url: str, tmp_path: Path
) -> None:
    tenant = com_dados(4)
    pronto(tenant, "antes", recalculado(tenant))
    c = colheita(tmp_path, url)
    c.soak.erp.parou_em = time.time()

    diferentes, sem_amostra = erp.recomputacao(c)

    assert (diferentes.valor, sem_amostra.valor) == (0, 1)


def test_escritas_de_todos_os_tipos_deixam_cada_venda_no_seu_tenant(url: str) -> None:
    primeiro, segundo = com_dados(5), com_dados(6)
    antes = Venda.objects.filter(tenant=segundo).count()
    with psycopg.connect(url, autocommit=True) as conexao:
        a, b = erp.cadastros(conexao, [primeiro.pk, segundo.pk])
        sorte = random.Random(7)
        feitas = Counter(erp.escrever_uma(conexao, sorte, a, b) for _ in range(300))

    assert set(feitas) - {""} == {
        "venda_atrasada",
        "correcao",
        "exclusao",
        "outro_mes",
        "outra_loja",
        "outro_tenant",
        "devolucao",
        "movimento",
    }
    # Sales moved to the second tenant took its store, seller and product.
    assert Venda.objects.filter(tenant=segundo).count() > antes
    assert not Venda.objects.exclude(loja__tenant=F("tenant")).exists()
    assert not Venda.objects.exclude(vendedor__tenant=F("tenant")).exists()
    assert not Venda.objects.exclude(produto__tenant=F("tenant")).exists()
    assert not Devolucao.objects.exclude(venda__tenant=F("tenant")).exists()


@pytest.mark.parametrize("tipo", erp.tipos_do_erp())
def test_os_periodos_pedidos_sao_validos_para_cada_tipo(tipo: str) -> None:
    sorte = random.Random(tipo)
    for _ in range(200):
        inicio, fim = erp.periodo(tipo, sorte)
        tipos.obter(tipo).normalizar(
            {"inicio": inicio.isoformat(), "fim": fim.isoformat(), "lojas": ["L001"]}
        )
