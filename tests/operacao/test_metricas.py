from __future__ import annotations

import json
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime, timedelta
from email.message import Message
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import connection, connections
from django.test import Client
from django.utils import timezone
from django_prometheus.db.backends.postgresql.base import (
    DatabaseWrapper as WrapperDoDjangoPrometheus,
)
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from relatorios.jobs import pedidos
from relatorios.models import (
    Agendamento,
    Alerta,
    EstadoDoJob,
    EstadoOcorrencia,
    Ocorrencia,
    RelatorioJob,
    Tenant,
)
from relatorios.operacao import acesso, exposicao
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers, processos

UTC = ZoneInfo("UTC")
PEDIDO = {"inicio": "2026-01-01", "fim": "2026-02-28", "agrupar": "mes"}
TOKEN_DAS_METRICAS = "token-de-metricas-de-teste-0b7d"


def raspar(url: str, *, token: str | None = None) -> dict[tuple[str, tuple], float]:
    """One scrape: {(sample name, sorted labels): value}."""
    pedido = urllib.request.Request(url)
    if token is not None:
        pedido.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(pedido, timeout=30) as resposta:
        texto = resposta.read().decode()
    return amostras(texto)


def amostras(texto: str) -> dict[tuple[str, tuple], float]:
    return {
        (amostra.name, tuple(sorted(amostra.labels.items()))): amostra.value
        for familia in text_string_to_metric_families(texto)
        for amostra in familia.samples
    }


def codigo_sem_token(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as resposta:
            return int(resposta.status)
    except urllib.error.HTTPError as erro:
        return erro.code


def com_vendas(tenant: Tenant) -> None:
    loja = helpers.criar_lojas(tenant, "L1")[0]
    vendedor = helpers.criar_vendedor(tenant)
    produto = helpers.criar_produto(tenant)
    for dia in range(1, 30):
        helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime(2026, 1, 1, 15, tzinfo=UTC) + timedelta(days=dia),
            quantidade=1,
            valor="10.00",
        )


def alerta_aberto(tenant: Tenant) -> Alerta:
    agora = timezone.now()
    agendamento = Agendamento.objects.create(
        tenant=tenant,
        tipo="vendas",
        periodo="ontem",
        cron="0 6 * * *",
        prazo=timedelta(hours=1),
    )
    ocorrencia = Ocorrencia.objects.create(
        agendamento=agendamento,
        tenant=tenant,
        planejado_para=agora - timedelta(hours=2),
        prazo_em=agora - timedelta(hours=1),
        estado=EstadoOcorrencia.NAO_DISPARADA,
        conferida=True,
    )
    return Alerta.objects.create(
        ocorrencia=ocorrencia, tenant=tenant, motivo="nenhum cluster disparou"
    )


def submeter_http(url: str, token: str, request_id: str) -> tuple[int, Message]:
    pedido = urllib.request.Request(
        f"{url}/relatorios/vendas",
        data=json.dumps(PEDIDO).encode(),
        method="POST",
    )
    pedido.add_header("Authorization", f"Token {token}")
    pedido.add_header("Content-Type", "application/json")
    pedido.add_header("X-Request-ID", request_id)
    with urllib.request.urlopen(pedido, timeout=60) as resposta:
        return int(resposta.status), resposta.headers


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_metricas_da_web_e_do_cluster_contam_o_que_aconteceu(
    tenant: Tenant,
    token: str,
    cluster: Callable[..., processos.Processo],
    ajustes: Callable[..., None],
    pasta_saida: Path,
) -> None:
    # Loopback is not in the allowed networks: only the token opens /metrics.
    ajustes(
        RELATORIOS_METRICAS_REDES="10.255.0.0/16",
        RELATORIOS_METRICAS_TOKEN=TOKEN_DAS_METRICAS,
    )
    com_vendas(tenant)
    porta_do_cluster = processos.porta_livre()
    trabalhador = cluster(RELATORIOS_METRICAS_PORTA=str(porta_do_cluster))
    web, url = processos.iniciar_web(pasta_saida / "web.log", WEB_WORKERS="2")
    try:
        respostas = [submeter_http(url, token, f"pedido-{n}") for n in range(1, 4)]
        job = RelatorioJob.objects.get(tenant=tenant)
        quebrado = pedidos.submeter(
            tenant_id=tenant.pk,
            tipo="teste_quebrado",
            params_brutos={"inicio": "2026-01-01", "fim": "2026-01-31"},
            usuario_id=None,
        ).job.id
        helpers.esperar(
            lambda: (
                helpers.job(job.pk).status == EstadoDoJob.PRONTO
                and helpers.job(quebrado).status == EstadoDoJob.FALHOU
            ),
            descricao="um job pronto e outro falho",
        )
        alerta_aberto(tenant)

        codigo_da_web = codigo_sem_token(f"{url}/metrics")
        da_web = raspar(f"{url}/metrics", token=TOKEN_DAS_METRICAS)
        codigo_do_cluster = codigo_sem_token(f"http://127.0.0.1:{porta_do_cluster}/")
        do_cluster = raspar(
            f"http://127.0.0.1:{porta_do_cluster}/metrics", token=TOKEN_DAS_METRICAS
        )
        trabalhador.parar()  # no cluster left: the web's scrape says so
        sem_cluster = raspar(f"{url}/metrics", token=TOKEN_DAS_METRICAS)
    finally:
        web.parar()

    def valor(raspagem: dict, nome: str, **rotulos: str) -> float | None:
        return raspagem.get((nome, tuple(sorted(rotulos.items()))))

    assert respostas[0][0] == 202
    assert [cabecalhos["X-Request-ID"] for _, cabecalhos in respostas] == [
        "pedido-1",
        "pedido-2",
        "pedido-3",
    ]
    assert helpers.job(job.pk).request_id == "pedido-1"
    assert (codigo_da_web, codigo_do_cluster) == (403, 403)
    # Submits are counted in the web workers (two processes, one sum).
    submissoes = "relatorios_submissoes_total"
    assert valor(da_web, submissoes, tipo="vendas", desfecho="novo") == 1
    assert valor(da_web, submissoes, tipo="vendas", desfecho="reaproveitado") == 2
    assert valor(da_web, submissoes, tipo="vendas", desfecho="rejeitado") is None
    # The job ran in the cluster: its counters are in the cluster's scrape.
    finalizados = "relatorios_jobs_finalizados_total"
    assert valor(do_cluster, finalizados, tipo="vendas", status="pronto") == 1
    assert valor(do_cluster, finalizados, tipo="vendas", status="falhou") is None
    assert valor(do_cluster, finalizados, tipo="teste_quebrado", status="falhou") == 1
    assert (
        valor(do_cluster, "relatorios_job_duracao_segundos_count", tipo="vendas") == 1
    )
    assert valor(do_cluster, "relatorios_job_espera_segundos_count", tipo="vendas") == 1
    assert valor(do_cluster, "relatorios_worker_jobs_executando") == 0
    # State from the database, the same on every scrape target.
    for raspagem in (da_web, do_cluster):
        assert valor(raspagem, "relatorios_alertas_abertos") == 1
        assert valor(raspagem, "relatorios_jobs", status="pendente") == 0
        assert valor(raspagem, "relatorios_jobs", status="executando") == 0
        assert valor(raspagem, "relatorios_clusters_vivos") == 1
        assert valor(raspagem, "relatorios_estado_coletado") == 1
        assert valor(raspagem, "relatorios_agendamentos_ativos") == 1
        assert valor(raspagem, "relatorios_cluster_batimento_idade_segundos") < 60
    assert valor(sem_cluster, "relatorios_clusters_vivos") == 0
    assert valor(sem_cluster, "relatorios_cluster_batimento_idade_segundos") == float(
        "inf"
    )
    # django-prometheus' HTTP metrics, by view: the three POSTs of the submit.
    por_view = [
        v
        for (nome, rotulos), v in da_web.items()
        if nome == "django_http_responses_total_by_status_view_method_total"
        and dict(rotulos).get("method") == "POST"
    ]
    assert sum(por_view) == 3


@pytest.mark.django_db
def test_submissoes_rejeitadas_e_reiniciadas_sao_contadas(tenant: Tenant) -> None:
    helpers.criar_lojas(tenant, "L1")

    def contagem(desfecho: str) -> float:
        return (
            REGISTRY.get_sample_value(
                "relatorios_submissoes_total",
                {"tipo": "vendas", "desfecho": desfecho},
            )
            or 0.0
        )

    antes = {d: contagem(d) for d in ("novo", "rejeitado", "reiniciado")}
    with pytest.raises(ErroDeParametro):
        pedidos.submeter(
            tenant_id=tenant.pk,
            tipo="vendas",
            params_brutos={**PEDIDO, "lojas": ["NAO-EXISTE"]},
            usuario_id=None,
        )
    job_id = pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id
    RelatorioJob.objects.filter(pk=job_id).update(status=EstadoDoJob.FALHOU, erro="x")
    pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    )

    assert {d: contagem(d) - antes[d] for d in antes} == {
        "novo": 1,
        "rejeitado": 1,
        "reiniciado": 1,
    }


@pytest.mark.django_db
def test_metricas_por_http_exigem_rede_permitida_ou_token(settings: Any) -> None:
    settings.RELATORIOS_METRICAS_REDES = ["10.0.0.0/8"]
    settings.RELATORIOS_METRICAS_TOKEN = TOKEN_DAS_METRICAS
    cliente = Client()

    recusado = cliente.get("/metrics", REMOTE_ADDR="192.168.1.9")
    errado = cliente.get(
        "/metrics", REMOTE_ADDR="192.168.1.9", HTTP_AUTHORIZATION="Bearer outro"
    )
    pela_rede = cliente.get("/metrics", REMOTE_ADDR="10.1.2.3")
    pelo_token = cliente.get(
        "/metrics",
        REMOTE_ADDR="192.168.1.9",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN_DAS_METRICAS}",
    )

    assert [r.status_code for r in (recusado, errado, pela_rede, pelo_token)] == [
        403,
        403,
        200,
        200,
    ]
    valores = amostras(pela_rede.content.decode())
    assert valores[("relatorios_estado_coletado", ())] == 1


@pytest.mark.parametrize(
    ("endereco", "identificado", "autorizacao", "token", "esperado"),
    [
        ("127.0.0.1", True, "", "", True),
        ("::1", True, "", "", True),
        ("::ffff:127.0.0.1", True, "", "", True),
        ("10.20.30.40", True, "", "", True),
        ("192.168.0.1", True, "", "", False),
        ("192.168.0.1", True, "Bearer segredo", "", False),  # no token configured
        ("192.168.0.1", True, "Bearer segredo", "segredo", True),
        ("192.168.0.1", True, "bearer segredo", "segredo", True),
        ("192.168.0.1", True, "Bearer segredo2", "segredo", False),
        ("192.168.0.1", True, "Token segredo", "segredo", False),
        (None, True, "", "", False),
        ("não é ip", True, "", "", False),
        # A proxy's own address, or a peer that forwarded without being ours:
        # inside the networks, and still nobody in particular.
        ("127.0.0.1", False, "", "", False),
        ("127.0.0.1", False, "Bearer segredo", "segredo", True),
    ],
)
def test_quem_pode_ler_as_metricas(
    endereco: str | None,
    identificado: bool,
    autorizacao: str,
    token: str,
    esperado: bool,
    settings: Any,
) -> None:
    settings.RELATORIOS_METRICAS_REDES = ["127.0.0.0/8", "::1/128", "10.0.0.0/8"]
    settings.RELATORIOS_METRICAS_TOKEN = token
    cliente = acesso.Cliente(endereco, identificado=identificado)

    assert exposicao.autorizado(cliente=cliente, autorizacao=autorizacao) is esperado


ROTULOS_DO_BANCO = {"alias": "default", "vendor": "postgresql"}


def contador_do_banco(nome: str) -> float:
    return REGISTRY.get_sample_value(nome, ROTULOS_DO_BANCO) or 0.0


def sem_ida_ao_banco() -> tuple[bool, str]:
    """(is_usable(), what the client sent to the server meanwhile)."""
    with tempfile.NamedTemporaryFile(mode="w+") as arquivo:
        connection.connection.pgconn.trace(arquivo.fileno())
        try:
            usavel = connection.is_usable()
        finally:
            connection.connection.pgconn.untrace()
        return usavel, Path(arquivo.name).read_text()


@pytest.mark.parametrize(("por_comando", "contados"), [(False, 0), (True, 1)])
@pytest.mark.django_db(transaction=True)
def test_banco_com_metricas_segue_sem_ida_ao_banco_no_health_check(
    por_comando: bool, contados: int, settings: Any
) -> None:
    settings.RELATORIOS_METRICAS_SQL = por_comando
    connection.close()  # the cursor factory is chosen when connecting
    conexoes = contador_do_banco("django_db_new_connections_total")
    connection.ensure_connection()
    comandos = contador_do_banco("django_db_execute_total")

    usavel, rastro = sem_ida_ao_banco()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")

    assert isinstance(connections["default"], WrapperDoDjangoPrometheus)
    assert usavel
    assert rastro == ""  # not a single message to the server
    assert contador_do_banco("django_db_new_connections_total") == conexoes + 1
    assert contador_do_banco("django_db_execute_total") == comandos + contados
    connection.close()


def test_gauges_vivos_de_processos_mortos_saem_da_pasta(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    morto = 2**22 + 12345  # above pid_max's default: never a live process
    for nome in (
        f"gauge_livesum_{morto}.db",
        f"counter_{morto}.db",
        f"gauge_livesum_{os.getpid()}.db",
    ):
        (tmp_path / nome).write_bytes(b"")

    assert exposicao.esquecer_processos_mortos() == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"counter_{morto}.db",
        f"gauge_livesum_{os.getpid()}.db",
    ]


def test_http_conta_resposta_e_latencia_por_view_uma_vez(client: Client) -> None:
    def valor(nome: str, **rotulos: str) -> float:
        return REGISTRY.get_sample_value(nome, rotulos) or 0.0

    respostas = "django_http_responses_total_by_status_view_method_total"
    latencia = "django_http_requests_latency_seconds_by_view_method_count"
    antes = (
        valor(respostas, status="200", view="healthz", method="GET"),
        valor(latencia, view="healthz", method="GET"),
    )

    assert client.get("/healthz").status_code == 200

    assert (
        valor(respostas, status="200", view="healthz", method="GET") - antes[0],
        valor(latencia, view="healthz", method="GET") - antes[1],
    ) == (1, 1)
