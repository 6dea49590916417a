"""A client app's story, told by a Python client generated from docs/openapi.yaml.

openapi-python-client (pinned in requirements.txt) builds the client from the
committed contract on every run; the test imports it and drives the live web
server and a real cluster with it. If the contract leaves a shape out (the
status answer once had no body schema: every poll parsed to None), the typed
objects below are missing or wrong, and the test says so.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from relatorios.jobs import suporte
from relatorios.models import RelatorioJob, Tenant
from tests import helpers, processos
from tests.api.test_resultado_parcial import executar_ate
from tests.paginas.test_navegador import com_vendas

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

PACOTE = "cliente_relatorios"


@pytest.fixture(scope="module")
def cliente_gerado(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    pasta = tmp_path_factory.mktemp("cliente")
    bin_do_venv = Path(sys.executable).parent
    subprocess.run(
        [
            str(bin_do_venv / "openapi-python-client"),
            "generate",
            "--path",
            str(processos.RAIZ / "docs" / "openapi.yaml"),
            "--meta",
            "none",
            "--output-path",
            str(pasta / PACOTE),
        ],
        check=True,
        capture_output=True,
        # Its post-generation hooks run ruff, from this venv.
        env={"PATH": str(bin_do_venv), "HOME": str(pasta)},
        timeout=300,
    )
    sys.path.insert(0, str(pasta))
    try:
        yield importlib.import_module(PACOTE)
    finally:
        sys.path.remove(str(pasta))
        for nome in [m for m in sys.modules if m.split(".")[0] == PACOTE]:
            del sys.modules[nome]


def modulo(cliente: ModuleType, nome: str) -> Any:
    return importlib.import_module(f"{cliente.__name__}.{nome}")


def api_de_relatorios(cliente: ModuleType) -> Any:
    # The generator names the package after the tag, accent included.
    return modulo(cliente, "api.relatórios")


@pytest.fixture
def conexao(
    cliente_gerado: ModuleType, servidor: str, tenant: Tenant
) -> tuple[ModuleType, Any, Callable[[str], Any]]:
    """The generated client, authenticated as a manager of `tenant`, and a
    raw GET of the same server for the JSON it must agree with."""
    token = helpers.criar_usuario(tenant)[1]
    cliente = cliente_gerado.AuthenticatedClient(
        base_url=servidor, token=token, prefix="Token", timeout=60
    )

    def bruto(caminho: str) -> Any:
        return processos.requisitar("GET", servidor + caminho, token=token)[2]

    return cliente_gerado, cliente, bruto


def esperar_estado(gerado: ModuleType, cliente: Any, job_id: int, classe: str) -> Any:
    estado_do_job = modulo(gerado, "api.relatórios.estado_do_job")
    fim = time.monotonic() + 90
    while True:
        estado = estado_do_job.sync(job_id=job_id, client=cliente)
        if type(estado).__name__ == classe or time.monotonic() > fim:
            return estado
        time.sleep(0.3)


def test_cliente_gerado_pede_acompanha_e_le_o_resultado_tipado(
    conexao: tuple[ModuleType, Any, Callable[[str], Any]],
    tenant: Tenant,
    cluster: Callable[..., processos.Processo],
) -> None:
    gerado, cliente, bruto = conexao
    com_vendas(tenant)
    modelos = modulo(gerado, "models")
    submeter = modulo(gerado, "api.relatórios.submeter_vendas")
    cluster()

    aceito = submeter.sync_detailed(
        client=cliente,
        body=modelos.Parametros(
            inicio="2026-01-01", fim="2026-02-28", agrupar=modelos.AgruparEnum.DIA
        ),
    )
    pronto = esperar_estado(gerado, cliente, aceito.parsed.id, "JobPronto")
    corpo = bruto(f"/relatorios/jobs/{aceito.parsed.id}")

    assert aceito.status_code == 202
    assert isinstance(aceito.parsed, modelos.JobAceito)
    assert aceito.parsed.status == modelos.StatusEmAndamentoEnum.PENDENTE
    assert isinstance(pronto, modelos.JobPronto)
    assert isinstance(pronto.resultado, modelos.ResultadoVendas)
    assert all(isinstance(li, modelos.LinhaVendas) for li in pronto.resultado.linhas)
    assert [li.to_dict() for li in pronto.resultado.linhas] == corpo["resultado"][
        "linhas"
    ]
    assert pronto.resultado.totais.to_dict() == corpo["resultado"]["totais"]
    assert len(pronto.resultado.linhas) == 3
    assert pronto.resultado.totais.receita == "1354.75"
    assert pronto.url == f"/relatorios/jobs/{pronto.id}/resultado.csv"
    # Asking again for what is ready answers 200 with the type's own shape.
    de_novo = submeter.sync_detailed(
        client=cliente,
        body=modelos.Parametros(
            inicio="2026-01-01", fim="2026-02-28", agrupar=modelos.AgruparEnum.DIA
        ),
    )
    assert de_novo.status_code == 200
    assert isinstance(de_novo.parsed, modelos.JobProntoVendas)
    assert de_novo.parsed.resultado.to_dict() == corpo["resultado"]


def test_cliente_gerado_le_cada_forma_do_estado(
    conexao: tuple[ModuleType, Any, Callable[[str], Any]], tenant: Tenant
) -> None:
    gerado, cliente, bruto = conexao
    modelos = modulo(gerado, "models")
    submeter = modulo(gerado, "api.relatórios.submeter_comissoes")
    estado_do_job = modulo(gerado, "api.relatórios.estado_do_job")
    helpers.criar_lojas(tenant, "L001")

    # No cluster runs: the job stays pending; then support gives up on it.
    aceito = submeter.sync(
        client=cliente, body=modelos.Parametros(inicio="2026-01-01", fim="2026-01-31")
    )
    pendente = estado_do_job.sync(job_id=aceito.id, client=cliente)
    suporte.marcar_como_falhou(job_id=aceito.id, motivo="dados do ERP incompletos")
    falhou = estado_do_job.sync(job_id=aceito.id, client=cliente)
    ausente = estado_do_job.sync(job_id=aceito.id + 1000, client=cliente)

    assert isinstance(pendente, modelos.JobEmAndamento)
    assert pendente.status == modelos.StatusEmAndamentoEnum.PENDENTE
    assert (pendente.progresso, pendente.tentativas) == (0, 0)
    assert pendente.proxima_tentativa_em is None
    assert isinstance(falhou, modelos.JobFalhou)
    assert falhou.status == modelos.StatusFalhouEnum.FALHOU
    assert falhou.erro == "dados do ERP incompletos"
    assert falhou.erro == bruto(f"/relatorios/jobs/{aceito.id}")["erro"]
    assert isinstance(ausente, modelos.Erro)
    assert ausente.erro == "não encontrado"
    assert RelatorioJob.objects.get(pk=aceito.id).status == "falhou"


def test_cliente_gerado_le_o_erro_tipado_de_um_400(
    conexao: tuple[ModuleType, Any, Callable[[str], Any]],
) -> None:
    gerado, cliente, _ = conexao
    modelos = modulo(gerado, "models")
    submeter = modulo(gerado, "api.relatórios.submeter_vendas")

    resposta = submeter.sync_detailed(
        client=cliente, body=modelos.Parametros(inicio="2026-02-01", fim="2026-01-01")
    )

    assert resposta.status_code == 400
    assert isinstance(resposta.parsed, modelos.Erro)
    assert resposta.parsed.campo == "fim"
    assert resposta.parsed.erro == json.loads(resposta.content)["erro"]
    assert RelatorioJob.objects.count() == 0


def test_cliente_gerado_le_o_resultado_parcial_tipado(
    conexao: tuple[ModuleType, Any, Callable[[str], Any]], tenant: Tenant
) -> None:
    gerado, cliente, bruto = conexao
    com_vendas(tenant)
    modelos = modulo(gerado, "models")
    submeter = modulo(gerado, "api.relatórios.submeter_vendas")
    estado_do_job = modulo(gerado, "api.relatórios.estado_do_job")
    aceito = submeter.sync(
        client=cliente,
        body=modelos.Parametros(
            inicio="2026-01-01", fim="2026-02-28", agrupar=modelos.AgruparEnum.DIA
        ),
    )
    # The worker's first chunk, in this process; the second never runs.
    executar_ate(tenant, aceito.id, 1)

    executando = estado_do_job.sync(job_id=aceito.id, client=cliente)
    corpo = bruto(f"/relatorios/jobs/{aceito.id}")

    assert isinstance(executando, modelos.JobEmAndamento)
    assert executando.status == modelos.StatusEmAndamentoEnum.EXECUTANDO
    parcial = executando.resultado_parcial
    assert isinstance(parcial, modelos.ResultadoParcial)
    assert (parcial.partes.feitas, parcial.partes.total) == (1, 2)
    assert (parcial.cobre.inicio, parcial.cobre.fim) == (
        date(2026, 1, 1),
        date(2026, 1, 31),
    )
    assert parcial.to_dict() == corpo["resultado_parcial"]
    assert len(corpo["resultado_parcial"]["resultado"]["linhas"]) == 2
