"""Cluster liveness with real processes: registration, beats, graceful stop,
kill -9 of a whole cluster holding queue messages, and the health endpoints."""

from __future__ import annotations

import json
import signal
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from relatorios.admin import clusters as admin_clusters
from relatorios.fila import clusters, mensagens
from relatorios.fila.broker import chave_do_cluster
from relatorios.jobs import pedidos
from relatorios.models import (
    Cluster,
    EstadoDoJob,
    RelatorioJob,
    RelatorioTentativa,
    Tenant,
    permissoes,
)
from tests import helpers
from tests.processos import Processo

pytestmark = [pytest.mark.django_db(transaction=True)]

RAPIDO = {
    "RELATORIOS_ORFAO_APOS_S": 4,
    "RELATORIOS_VARREDURA_S": 0.5,
    "RELATORIOS_BATIMENTO_S": 0.5,
    "RELATORIOS_CLUSTER_BATIMENTO_S": 0.5,
    "RELATORIOS_BACKOFF_S": 0.2,
    "RELATORIOS_BACKOFF_MAX_S": 2,
    # Far beyond the bound tested below: the lost-message sweep must not be
    # what brings back the messages of a dead cluster.
    "RELATORIOS_REENFILEIRAR_APOS_S": 300,
    "RELATORIOS_DESLIGAMENTO_S": 1,
    "RELATORIOS_MAX_EXECUTANDO_POR_TENANT": 10,
}
# Processes on a shared 2-core machine: scheduling, a poll, a fork.
FOLGA_S = 2.0


@pytest.fixture(autouse=True)
def rapido(ajustes: Callable[..., None]) -> None:
    ajustes(**RAPIDO)


def submeter(tenant: Tenant, mes: int) -> int:
    inicio = date(2026, mes, 1)
    fim = (inicio + timedelta(days=31)).replace(day=1) - timedelta(days=1)
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="teste_lento",
        params_brutos={"inicio": inicio.isoformat(), "fim": fim.isoformat()},
        usuario_id=None,
    ).job.id


def agora_do_banco() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def linha_do_cluster(processo: Processo) -> Cluster:
    return helpers.esperar(
        lambda: Cluster.objects.filter(pid=processo.pid).first(),
        descricao="linha do cluster",
    )


def mensagem(job_id: int, *, chave: str, lock: datetime) -> OrmQ:
    tarefa = {"id": f"t{job_id}", "func": mensagens.TAREFA_RELATORIO, "args": (job_id,)}
    return OrmQ.objects.create(
        key=chave, payload=SignedPackage.dumps(tarefa), lock=lock
    )


def job_da_mensagem(m: OrmQ) -> int:
    return int(m.task["args"][0])


def http_json(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resposta:
            return resposta.status, json.loads(resposta.read())
    except urllib.error.HTTPError as erro:
        return erro.code, json.loads(erro.read())


@pytest.mark.processos
def test_cluster_registra_bate_e_encerra_na_parada_graciosa(
    cluster: Callable[..., Processo],
) -> None:
    processo = cluster()
    linha = linha_do_cluster(processo)
    assert linha.versao == clusters.versao_do_projeto() != ""
    assert linha.encerrado_em is None
    assert linha.morto_em is None

    primeiro = linha.batimento_em
    helpers.esperar(
        lambda: Cluster.objects.get(pk=linha.pk).batimento_em > primeiro,
        timeout=RAPIDO["RELATORIOS_CLUSTER_BATIMENTO_S"] * 4 + FOLGA_S,
        descricao="batimento avançar",
    )
    processo.parar()

    linha.refresh_from_db()
    assert linha.encerrado_em is not None
    assert linha.morto_em is None
    assert clusters.declarar_mortos() == 0


@pytest.mark.processos
def test_cluster_morto_com_kill_9_devolve_as_mensagens_que_segurava(
    tenant: Tenant, cluster: Callable[..., Processo]
) -> None:
    # One worker, queue_limit 1: one job runs, one waits in the task queue and
    # one in the pusher's hands, blocked on the full queue.
    primeiro = cluster(RELATORIOS_WORKERS="1", RELATORIOS_TESTE_PAUSA_S="30")
    morto = linha_do_cluster(primeiro)
    jobs = [submeter(tenant, mes) for mes in (1, 2, 3)]
    chave_do_morto = chave_do_cluster(fila=Conf.CLUSTER_NAME, cluster_id=morto.pk)
    helpers.esperar(
        lambda: (
            OrmQ.objects.filter(key=chave_do_morto).count() == 3
            and RelatorioJob.objects.filter(status=EstadoDoJob.EXECUTANDO).count() == 1
        ),
        descricao="o cluster segurar as 3 mensagens, uma rodando",
    )
    assert (
        RelatorioJob.objects.filter(pk__in=jobs, status=EstadoDoJob.PENDENTE).count()
        == 2
    )
    segundo = cluster(RELATORIOS_WORKERS="4", RELATORIOS_TESTE_PAUSA_S="0.2")
    vivo = linha_do_cluster(segundo)

    primeiro.sinal(signal.SIGKILL)
    morte = agora_do_banco()
    # A killed host's sessions die with it; here PostgreSQL would only notice
    # when the dead worker's pg_sleep ends (and the test database stays busy).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            # A chunk's statement follows its limits in the same message.
            " AND query LIKE '%%SELECT pg_sleep%%'"
        )
    helpers.esperar(
        lambda: (
            not RelatorioJob.objects.filter(pk__in=jobs)
            .exclude(status=EstadoDoJob.PRONTO)
            .exists()
        ),
        timeout=60,
        descricao="os 3 jobs prontos",
    )
    terminados = list(RelatorioJob.objects.filter(pk__in=jobs))

    limite = timedelta(
        seconds=RAPIDO["RELATORIOS_ORFAO_APOS_S"]
        + RAPIDO["RELATORIOS_VARREDURA_S"]
        + 2 * RAPIDO["RELATORIOS_BACKOFF_S"]  # the orphan's first retry delay
        + FOLGA_S
    )
    for job in terminados:
        tentativas = list(
            RelatorioTentativa.objects.filter(job_id=job.pk).order_by("numero")
        )
        # Claimed exactly once per attempt, the last one by the live cluster.
        assert [t.numero for t in tentativas] == list(range(1, job.tentativas + 1))
        assert tentativas[-1].iniciado_em - morte < limite
        print(f"job {job.pk}: recomeçou {tentativas[-1].iniciado_em - morte} após")
    assert sorted(j.tentativas for j in terminados) == [1, 1, 2]
    morto.refresh_from_db()
    assert morto.morto_em is not None
    assert Cluster.objects.get(pk=vivo.pk).morto_em is None
    # The running job's held message was stale: deleted, not left to be
    # redelivered by django-q2 after its retry for nothing.
    helpers.esperar(lambda: not OrmQ.objects.exists(), descricao="fila vazia")


def test_dois_declarando_ao_mesmo_tempo_o_morto_e_declarado_uma_vez(
    tenant: Tenant,
) -> None:
    morto_id = clusters.registrar(host="h", pid=1, versao="x")
    Cluster.objects.filter(pk=morto_id).update(
        batimento_em=timezone.now() - timedelta(seconds=60)
    )
    job_id = submeter(tenant, 1)
    OrmQ.objects.all().delete()
    mensagem(
        job_id,
        chave=chave_do_cluster(fila=Conf.CLUSTER_NAME, cluster_id=morto_id),
        lock=timezone.now() + timedelta(seconds=Conf.RETRY - 5),
    )
    declarou = threading.Event()
    liberar = threading.Event()
    resultados: dict[str, int] = {}

    def primeiro() -> None:
        with transaction.atomic():
            resultados["primeiro"] = clusters.declarar_mortos()
            declarou.set()
            liberar.wait(30)
        connection.close()

    def segundo() -> None:
        resultados["segundo"] = clusters.declarar_mortos()
        connection.close()

    a = threading.Thread(target=primeiro)
    a.start()
    assert declarou.wait(30)
    b = threading.Thread(target=segundo)
    b.start()
    # The second caller waits on the row the first one changed.
    helpers.esperar(_esperando_trava, descricao="o segundo esperar pela trava")
    liberar.set()
    a.join(30)
    b.join(30)

    assert resultados == {"primeiro": 1, "segundo": 0}
    mensagens = list(OrmQ.objects.all())
    assert [(m.key, job_da_mensagem(m)) for m in mensagens] == [
        (Conf.CLUSTER_NAME, job_id)
    ]
    assert mensagens[0].lock <= timezone.now()


def _esperando_trava() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND query LIKE '%%relatorio_clusters%%'"
        )
        return bool(cursor.fetchone()[0])


def test_mensagens_do_morto_voltam_so_quando_sao_o_unico_caminho_do_job(
    tenant: Tenant,
) -> None:
    vivo_id = clusters.registrar(host="h", pid=2, versao="x")
    morto_id = clusters.registrar(host="h", pid=1, versao="x")
    Cluster.objects.filter(pk=morto_id).update(
        batimento_em=timezone.now() - timedelta(seconds=60)
    )
    sozinho, com_outra, rodando, do_vivo = (
        submeter(tenant, mes) for mes in range(1, 5)
    )
    RelatorioJob.objects.filter(pk=rodando).update(status=EstadoDoJob.EXECUTANDO)
    OrmQ.objects.all().delete()
    fila = Conf.CLUSTER_NAME
    do_morto = chave_do_cluster(fila=fila, cluster_id=morto_id)
    retida = timezone.now() + timedelta(seconds=Conf.RETRY - 5)
    for job_id in (sozinho, sozinho, com_outra, rodando):
        mensagem(job_id, chave=do_morto, lock=retida)
    mensagem(com_outra, chave=fila, lock=timezone.now() + timedelta(seconds=30))
    chave_do_vivo = chave_do_cluster(fila=fila, cluster_id=vivo_id)
    mensagem(do_vivo, chave=chave_do_vivo, lock=retida)

    assert clusters.declarar_mortos() == 1

    restantes = sorted(
        (job_da_mensagem(m), m.key, m.lock <= timezone.now())
        for m in OrmQ.objects.all()
    )
    assert restantes == sorted(
        [
            (sozinho, fila, True),  # back, once: the second copy was a duplicate
            (com_outra, fila, False),  # only its own delayed retry is left
            (do_vivo, chave_do_vivo, False),  # a live cluster's: untouched
        ]
    )


def test_suporte_ve_a_lista_de_clusters_sem_mudar_nada(tenant: Tenant) -> None:
    vivo = clusters.registrar(host="maquina-a", pid=11, versao="0.1.0")
    encerrado = clusters.registrar(host="maquina-b", pid=12, versao="0.1.0")
    clusters.encerrar(cluster_id=encerrado)
    morto = clusters.registrar(host="maquina-c", pid=13, versao="0.0.9")
    Cluster.objects.filter(pk=morto).update(
        batimento_em=timezone.now() - timedelta(seconds=60)
    )
    clusters.declarar_mortos()
    usuario = helpers.criar_usuario(None, is_staff=True)[0]
    usuario.groups.add(permissoes.criar_grupo_suporte())
    cliente = Client()
    cliente.force_login(usuario)

    resposta = cliente.get("/admin/relatorios/cluster/")
    assert resposta.status_code == 200
    estados = {
        c.pk: admin_clusters.estado(c) for c in resposta.context["cl"].result_list
    }
    assert estados == {vivo: "vivo", encerrado: "encerrado", morto: "morto"}
    assert cliente.get(f"/admin/relatorios/cluster/{vivo}/change/").status_code == 200
    for proibido in ("add/", f"{vivo}/delete/"):
        url = f"/admin/relatorios/cluster/{proibido}"
        assert cliente.get(url).status_code == 403, url


def test_readyz_exige_o_verificador_so_quando_configurado(
    client: Client, settings: Any
) -> None:
    settings.RELATORIOS_VERIFICADOR_MAX_S = 0
    cluster_id = clusters.registrar(host="h", pid=1, versao="x")
    assert client.get("/readyz").status_code == 200

    settings.RELATORIOS_VERIFICADOR_MAX_S = 30
    resposta = client.get("/readyz")
    assert resposta.status_code == 503
    assert resposta.json()["verificador_idade_s"] is None
    assert resposta.json()["problemas"] == ["o verificador não rodou nos últimos 30 s"]

    clusters.marcar_verificador(cluster_id=cluster_id)
    resposta = client.get("/readyz")
    assert resposta.status_code == 200
    assert 0 <= resposta.json()["verificador_idade_s"] < 30


@pytest.mark.processos
def test_readyz_falha_sem_cluster_e_passa_com_um_healthz_responde(
    servidor: str, cluster: Callable[..., Processo]
) -> None:
    assert http_json(f"{servidor}/healthz") == (
        200,
        {"status": "ok", "problemas": []},
    )
    status, corpo = http_json(f"{servidor}/readyz")
    assert status == 503
    assert corpo == {
        "status": "falha",
        "cluster_batimento_idade_s": None,
        "verificador_idade_s": None,
        "clusters_vivos": 0,
        "problemas": [
            "nenhum cluster bateu nos últimos 4 s",
            "o verificador não rodou nos últimos 60 s",
        ],
    }

    processo = cluster()
    status, corpo = helpers.esperar(
        lambda: (r := http_json(f"{servidor}/readyz"))[0] == 200 and r,
        timeout=RAPIDO["RELATORIOS_CLUSTER_BATIMENTO_S"] + FOLGA_S + 5,
        descricao="readyz passar com o cluster batendo",
    )
    assert status == 200
    assert corpo["status"] == "ok"
    assert corpo["clusters_vivos"] == 1
    assert corpo["cluster_batimento_idade_s"] <= RAPIDO["RELATORIOS_ORFAO_APOS_S"]
    assert corpo["problemas"] == []

    processo.matar()
    status, corpo = helpers.esperar(
        lambda: (r := http_json(f"{servidor}/readyz"))[0] == 503 and r,
        timeout=RAPIDO["RELATORIOS_ORFAO_APOS_S"] + FOLGA_S + 5,
        descricao="readyz falhar sem cluster batendo",
    )
    assert corpo["clusters_vivos"] == 0
    assert corpo["cluster_batimento_idade_s"] > RAPIDO["RELATORIOS_ORFAO_APOS_S"]
