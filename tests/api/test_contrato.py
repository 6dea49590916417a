"""The OpenAPI contract, checked by schemathesis against a live web server + cluster.

The schema is the committed docs/openapi.yaml, which client apps are built
from (the server serves the same at /api/schema/, checked below; the code
generates the same, tests/api/test_openapi.py). Every operation gets generated
requests, valid and invalid, with a tenant's token; the stateful run follows
the schema's links (submit -> status -> CSV, create -> read/pause/delete).
Every answer must conform: no 5xx, a documented status, content type and body.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Flaky
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from relatorios.models import EstadoDoJob, RelatorioJob
from tests import helpers, processos

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

VERIFICACOES = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    # Beyond the four asked for: Location, Retry-After and WWW-Authenticate
    # are declared, so they are checked too.
    response_headers_conformance,
]
# Examples per operation (valid and invalid data), and scenarios of the stateful
# run: bounded so the module stays within a minute or two. A deeper hunt:
# CONTRATO_EXEMPLOS=500 .venv/bin/pytest tests/api/test_contrato.py
EXEMPLOS = int(os.environ.get("CONTRATO_EXEMPLOS", "30"))
CENARIOS = max(40, EXEMPLOS)
# Hypothesis keeps the failing examples it found here (replayed first on the
# next run), never in the repository's root.
BANCO_DE_EXEMPLOS = DirectoryBasedExampleDatabase(
    str(processos.RAIZ / "test-output" / "hypothesis")
)
AJUSTES = settings(
    max_examples=EXEMPLOS,
    # A request to a live server is slow for hypothesis' taste, and varies.
    deadline=None,
    # With CI=true hypothesis loads its "ci" profile: derandomized, so the
    # same examples every run, and then it refuses an example database.
    database=None if settings.default.derandomize else BANCO_DE_EXEMPLOS,
    suppress_health_check=list(HealthCheck),
)


@dataclass(frozen=True)
class Api:
    url: str
    token: str

    @property
    def cabecalhos(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}"}


# The product's types only (the committed schema's), no test types; the
# per-token limit has its own tests (test_limites.py): here it would only turn
# the run's later requests into 429s. Local webhooks, so that one can be
# registered without a public host.
EXTRAS = {
    "RELATORIOS_TIPOS_EXTRAS": "",
    "RELATORIOS_API_LIMITE": "0",
    "RELATORIOS_WEBHOOK_PERMITIR_LOCAL": "true",
}

# The committed contract, which client apps are built from. Loaded at import so
# that each operation is its own test (schemathesis' lazy `from_fixture`, which
# would load the served one, touches pytest internals that 9.2 renamed); the
# fixture below checks that the live server serves this very document.
esquema = schemathesis.openapi.from_path(processos.RAIZ / "docs" / "openapi.yaml")


@pytest.fixture(scope="module")
def servidor(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    # One web server for the module: it only touches the database while a test
    # is asking it something, so the flush between tests never waits for it.
    with django_db_blocker.unblock():
        processo, url = processos.iniciar_web(
            processos.RAIZ / "test-output" / "test_contrato" / "web.log",
            WEB_WORKERS="2",
            **EXTRAS,
        )
    yield url
    processo.parar()


@pytest.fixture
def com_cluster(cluster: Any) -> None:
    # Per test, unlike the server: a cluster writes all the time (beats,
    # sweeps), and a module-long one deadlocked with the flush between tests.
    cluster(**EXTRAS)


@pytest.fixture
def api(servidor: str) -> Api:
    tenant = helpers.criar_tenant("Rede Contrato")
    lojas = helpers.criar_lojas(tenant, "L001", "L002")
    vendedor = helpers.criar_vendedor(tenant, taxa="0.0350")
    produto = helpers.criar_produto(tenant, preco="12.50")
    for dia in (2, 15, 28):
        helpers.criar_venda(
            loja=lojas[dia % 2],
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime(2026, 1, dia, 15, tzinfo=UTC),
            quantidade=3,
            valor="37.50",
        )
    _, token = helpers.criar_usuario(tenant, email="gerente@example.com")
    return Api(url=servidor, token=token)


def test_o_servidor_serve_o_esquema_commitado(api: Api) -> None:
    servido = schemathesis.openapi.from_url(f"{api.url}/api/schema/")
    assert servido.raw_schema == esquema.raw_schema


@esquema.parametrize()
@AJUSTES
def test_cada_operacao_cumpre_o_contrato(case: Any, api: Api) -> None:
    case.call_and_validate(
        base_url=api.url, headers=api.cabecalhos, checks=VERIFICACOES
    )


@pytest.mark.usefixtures("com_cluster")
def test_sequencias_pelos_links_cumprem_o_contrato(api: Api) -> None:
    passos: list[str] = []

    class ComToken(esquema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": api.url, "headers": api.cabecalhos}

        def after_call(self, response: Any, case: Any) -> None:
            passos.append(f"{case.method} {case.path} {response.status_code}")

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=VERIFICACOES)

    # The server has state (a repeated request finds its job `pronto`, a
    # resource once created is there), so a scenario hypothesis replays may
    # take another link than the first time: hypothesis calls that Flaky. As
    # schemathesis' own runner does, that is not a contract failure: the run
    # goes on with new scenarios until the budget is spent. Failures of the
    # checks propagate.
    def seguiu_os_links() -> bool:
        seguidos = " ".join(passos)
        return (
            "GET /relatorios/jobs/{job_id} 200" in seguidos
            and "/relatorios/agendamentos/{agendamento_id}" in seguidos
        )

    # Scenarios are random: on a loaded machine the budget's first rounds may
    # not reach both links yet, so the run goes on (bounded) until they do.
    limite = time.monotonic() + 180
    while (len(passos) < CENARIOS * 3 or not seguiu_os_links()) and (
        time.monotonic() < limite
    ):
        try:
            ComToken.run(
                settings=settings(
                    max_examples=CENARIOS,
                    stateful_step_count=6,
                    phases=[Phase.generate],
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                )
            )
        except Flaky:
            continue
    seguidos = " ".join(passos)
    # The links were followed: submit -> status, create -> read.
    assert "GET /relatorios/jobs/{job_id} 200" in seguidos
    assert "/relatorios/agendamentos/{agendamento_id}" in seguidos


@pytest.mark.usefixtures("com_cluster")
def test_submeter_e_seguir_location_ate_o_csv(api: Api) -> None:
    submeter = esquema["/relatorios/vendas"]["POST"]
    pedido = submeter.Case(
        body={"inicio": "2026-01-01", "fim": "2026-01-31", "lojas": ["L001"]},
        media_type="application/json",
    )
    resposta = pedido.call_and_validate(
        base_url=api.url, headers=api.cabecalhos, checks=VERIFICACOES
    )
    assert resposta.status_code == 202
    local = resposta.headers["location"][0]

    estado = esquema["/relatorios/jobs/{job_id}"]["GET"]
    job_id = int(local.rsplit("/", 1)[-1])

    def consultar() -> Any:
        caso = estado.Case(path_parameters={"job_id": job_id})
        atual = caso.call_and_validate(
            base_url=api.url, headers=api.cabecalhos, checks=VERIFICACOES
        )
        return atual if atual.json()["status"] == "pronto" else None

    pronto = helpers.esperar(consultar, timeout=60, descricao="job pronto")
    assert local == f"/relatorios/jobs/{job_id}"
    assert pronto.json()["resultado"]["totais"]["vendas"] > 0

    csv = esquema["/relatorios/jobs/{job_id}/resultado.csv"]["GET"]
    arquivo = csv.Case(path_parameters={"job_id": job_id}).call_and_validate(
        base_url=api.url, headers=api.cabecalhos, checks=VERIFICACOES
    )
    assert arquivo.headers["content-type"][0].startswith("text/csv")

    # The same request again: 200 with the result, and the same Location.
    de_novo = submeter.Case(
        body={"inicio": "2026-01-01", "fim": "2026-01-31", "lojas": ["L001"]},
        media_type="application/json",
    ).call_and_validate(base_url=api.url, headers=api.cabecalhos, checks=VERIFICACOES)
    assert de_novo.status_code == 200
    assert de_novo.headers["location"] == [local]


def test_webhook_criado_lido_e_removido_cumpre_o_contrato(api: Api) -> None:
    criado = chamar(
        api,
        "/relatorios/webhooks",
        "POST",
        body={"url": "http://127.0.0.1:9/ganchos", "eventos": ["job.pronto"]},
        media_type="application/json",
    )
    assert criado.status_code == 201
    webhook = {"webhook_id": criado.json()["id"]}
    detalhe = "/relatorios/webhooks/{webhook_id}"
    assert chamar(api, detalhe, "GET", path_parameters=webhook).status_code == 200
    removido = chamar(api, detalhe, "DELETE", path_parameters=webhook)
    assert removido.status_code == 204
    assert chamar(api, detalhe, "GET", path_parameters=webhook).status_code == 404


def chamar(api: Api, caminho: str, metodo: str, **dados: Any) -> Any:
    """One request of the committed schema's operation, checked like the rest."""
    return (
        esquema[caminho][metodo]
        .Case(**dados)
        .call_and_validate(
            base_url=api.url, headers=api.cabecalhos, checks=VERIFICACOES
        )
    )


def test_agendamento_criado_pausado_retomado_e_excluido_cumpre_o_contrato(
    api: Api,
) -> None:
    criado = chamar(
        api,
        "/relatorios/agendamentos",
        "POST",
        body={
            "nome": "Vendas de ontem",
            "tipo": "vendas",
            "periodo": "ontem",
            "cron": "0 6 * * *",
            "prazo_minutos": 60,
            "lojas": ["L001"],
            "destinatarios": ["gerente@example.com"],
        },
        media_type="application/json",
    )
    assert criado.status_code == 201
    agendamento = {"agendamento_id": criado.json()["id"]}
    detalhe = "/relatorios/agendamentos/{agendamento_id}"
    assert chamar(api, detalhe, "GET", path_parameters=agendamento).status_code == 200
    pausado = chamar(api, f"{detalhe}/pausar", "POST", path_parameters=agendamento)
    assert pausado.json()["ativo"] is False
    retomado = chamar(api, f"{detalhe}/retomar", "POST", path_parameters=agendamento)
    assert retomado.json()["ativo"] is True
    lista = chamar(api, "/relatorios/agendamentos", "GET")
    assert [a["id"] for a in lista.json()["agendamentos"]] == [
        agendamento["agendamento_id"]
    ]
    excluido = chamar(api, detalhe, "DELETE", path_parameters=agendamento)
    assert excluido.status_code == 204
    assert chamar(api, detalhe, "GET", path_parameters=agendamento).status_code == 404


def test_job_que_falhou_cumpre_o_contrato(api: Api) -> None:
    aceito = chamar(
        api,
        "/relatorios/estoque",
        "POST",
        body={"inicio": "2025-03-01", "fim": "2025-03-31"},
        media_type="application/json",
    )
    job = {"job_id": aceito.json()["id"]}
    # As the worker's fenced write would leave it (tests may set a state the
    # workers reach only through a real failure).
    RelatorioJob.objects.filter(pk=job["job_id"]).update(
        status=EstadoDoJob.FALHOU, erro="ValueError: falha de teste"
    )
    estado = chamar(api, "/relatorios/jobs/{job_id}", "GET", path_parameters=job)
    assert estado.json() == {
        "id": job["job_id"],
        "status": "falhou",
        "erro": "ValueError: falha de teste",
    }
    csv = chamar(
        api, "/relatorios/jobs/{job_id}/resultado.csv", "GET", path_parameters=job
    )
    assert csv.status_code == 409
