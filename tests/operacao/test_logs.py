from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from relatorios.operacao import logs
from tests import helpers, processos
from tests.notificacoes.test_notificacoes import Receptor, webhook
from tests.operacao.test_metricas import TOKEN_DAS_METRICAS, com_vendas, submeter_http

REQUEST_ID = "req-obs-4f2a.9_x"


@pytest.fixture
def receptor() -> Iterator[Receptor]:
    receptor = Receptor()
    yield receptor
    receptor.servidor.shutdown()
    receptor.servidor.server_close()


def linhas_json(texto: str) -> list[dict[str, Any]]:
    """Every non-empty line, each parsed as one JSON object (fails otherwise)."""
    return [json.loads(linha) for linha in texto.splitlines() if linha.strip()]


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_um_pedido_se_segue_por_request_id_em_json_sem_segredos(
    tenant: Tenant,
    token: str,
    receptor: Receptor,
    cluster: Callable[..., processos.Processo],
    ajustes: Callable[..., None],
    pasta_saida: Path,
) -> None:
    ajustes(
        LOG_FORMAT="json",
        RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True,
        RELATORIOS_METRICAS_TOKEN=TOKEN_DAS_METRICAS,
        LOG_LEVEL="DEBUG",
    )
    for anterior in pasta_saida.glob("*.log"):
        anterior.unlink()  # the processes append: only this run's lines
    com_vendas(tenant)
    gancho = webhook(tenant, receptor.url, ["job.pronto"])
    trabalhador = cluster()
    web, url = processos.iniciar_web(pasta_saida / "web.log", WEB_ACCESSLOG="-")
    try:
        status, cabecalhos = submeter_http(url, token, REQUEST_ID)
        invalido = submeter_http(url, token, "não vale: espaços e acentos")[1]
        job = RelatorioJob.objects.get(tenant=tenant)
        helpers.esperar(
            lambda: helpers.job(job.pk).status == EstadoDoJob.PRONTO,
            descricao="o job ficar pronto",
        )
        helpers.esperar(lambda: receptor.recebidas, descricao="o webhook chegar")
    finally:
        web.parar()
        trabalhador.parar()

    da_web = linhas_json(web.texto_do_log())
    do_cluster = linhas_json(trabalhador.texto_do_log())
    assert status == 202
    assert cabecalhos["X-Request-ID"] == REQUEST_ID
    assert len(invalido["X-Request-ID"]) == 32  # replaced by a generated one
    assert helpers.job(job.pk).request_id == REQUEST_ID
    # The web: the submit's own line and the access line carry the id.
    do_pedido = [linha for linha in da_web if linha.get("request_id") == REQUEST_ID]
    assert {linha.get("evento") for linha in do_pedido} >= {"solicitado", "acesso"}
    acesso = next(linha for linha in do_pedido if linha.get("evento") == "acesso")
    assert (acesso["metodo"], acesso["caminho"], acesso["status"]) == (
        "POST",
        "/relatorios/vendas",
        "202",
    )
    solicitado = next(li for li in do_pedido if li.get("evento") == "solicitado")
    assert solicitado["job_id"] == job.pk
    assert solicitado["tenant_id"] == tenant.pk
    assert solicitado["chave"] == job.chave[:12]
    # The worker: the job's lifecycle lines carry the same id.
    do_job = [linha for linha in do_cluster if linha.get("job_id") == job.pk]
    eventos = {linha.get("evento"): linha for linha in do_job}
    assert {"iniciado", "concluido"} <= set(eventos)
    assert {linha.get("request_id") for linha in do_job} == {REQUEST_ID}
    assert eventos["concluido"]["tentativa"] == 1
    assert isinstance(eventos["concluido"]["duracao_ms"], int)
    assert eventos["iniciado"]["tipo"] == "vendas"
    # The webhook about the job carries it too.
    assert receptor.recebidas[0][0]["X-Request-ID"] == REQUEST_ID
    # And no secret anywhere: the API token, the webhook's secret (whole or
    # its key alone), the metrics token.
    tudo = web.texto_do_log() + trabalhador.texto_do_log()
    for segredo in (
        token,
        gancho.segredo,
        gancho.segredo.removeprefix("whsec_"),
        TOKEN_DAS_METRICAS,
    ):
        assert segredo not in tudo


@pytest.mark.parametrize(
    ("recebido", "aceito"),
    [
        ("abc-123", True),
        ("A.b_c-9", True),
        ("x" * 64, True),
        ("x" * 65, False),
        ("", False),
        (None, False),
        ("com espaço", False),
        ("ação", False),
        ("a\nb", False),
        ("a;b", False),
    ],
)
def test_request_id_do_cliente_so_quando_plausivel(
    recebido: str | None, aceito: bool
) -> None:
    valor = logs.request_id_valido(recebido)

    assert (valor == recebido) is aceito
    assert 1 <= len(valor) <= 64


def test_linha_leva_o_request_id_do_contexto() -> None:
    registro = logging.makeLogRecord({"msg": "x"})
    token = logs.definir_request_id("r-1")
    try:
        logs.ComRequestId().filter(registro)
    finally:
        logs.restaurar_request_id(token)

    assert registro.request_id == "r-1"
