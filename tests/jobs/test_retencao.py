from __future__ import annotations

import itertools
import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_q.models import Task

from relatorios.jobs import retencao
from relatorios.models import (
    Agendamento,
    Cluster,
    Entrega,
    EstadoDoJob,
    EstadoOcorrencia,
    Inscricao,
    Ocorrencia,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
    Tenant,
    Usuario,
)

pytestmark = pytest.mark.django_db

_seq = itertools.count(1)


def criar_job(tenant: Tenant, status: str, *, idade_dias: float, **campos: Any) -> int:
    """A job created, and (if finished) finished, `idade_dias` ago."""
    quando = timezone.now() - timedelta(days=idade_dias)
    job = RelatorioJob.objects.create(
        chave=f"chave-{next(_seq)}",
        tenant=tenant,
        tipo="vendas",
        params={},
        status=status,
        **campos,
    )
    RelatorioJob.objects.filter(pk=job.pk).update(criado_em=quando)
    RelatorioTentativa.objects.create(job=job, numero=1, iniciado_em=quando)
    return job.pk


def pronto(tenant: Tenant, *, expirou_ha_dias: float) -> int:
    expira = timezone.now() - timedelta(days=expirou_ha_dias)
    return criar_job(
        tenant,
        EstadoDoJob.PRONTO,
        idade_dias=expirou_ha_dias + 1,
        concluido_em=expira - timedelta(days=1),
        expira_em=expira,
        resultado={},
    )


def existe(job_id: int) -> bool:
    return RelatorioJob.objects.filter(pk=job_id).exists()


def test_job_dentro_da_janela_fica_e_o_de_fora_some_com_o_historico(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_RETER_DIAS = 30
    dentro = pronto(tenant, expirou_ha_dias=29)
    fora = pronto(tenant, expirou_ha_dias=31)
    RelatorioParcial.objects.create(job_id=fora, parte=0, parcial={})
    Inscricao.objects.create(job_id=fora, email="a@exemplo.com")

    assert retencao.expurgar() == 1

    assert existe(dentro)
    assert not existe(fora)
    assert RelatorioTentativa.objects.filter(job_id=dentro).count() == 1
    assert not RelatorioTentativa.objects.filter(job_id=fora).exists()
    assert not RelatorioParcial.objects.filter(job_id=fora).exists()
    assert not Inscricao.objects.filter(job_id=fora).exists()


def test_falho_conta_a_janela_desde_a_falha(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_RETER_DIAS = 30
    agora = timezone.now()
    recente = criar_job(
        tenant,
        EstadoDoJob.FALHOU,
        idade_dias=40,
        concluido_em=agora - timedelta(days=5),
    )
    antigo = criar_job(
        tenant,
        EstadoDoJob.FALHOU,
        idade_dias=40,
        concluido_em=agora - timedelta(days=31),
    )

    assert retencao.expurgar() == 1

    assert existe(recente)
    assert not existe(antigo)


@pytest.mark.parametrize("status", [EstadoDoJob.PENDENTE, EstadoDoJob.EXECUTANDO])
def test_job_ativo_nunca_e_tocado_mesmo_velho(
    tenant: Tenant, settings: Any, status: str
) -> None:
    settings.RELATORIOS_RETER_DIAS = 1
    velho = timezone.now() - timedelta(days=400)
    job_id = criar_job(
        tenant,
        status,
        idade_dias=400,
        # Leftovers of an earlier run: an expired result, an old finish.
        concluido_em=velho,
        expira_em=velho,
        heartbeat_em=velho,
    )

    assert retencao.expurgar() == 0

    assert existe(job_id)
    assert RelatorioTentativa.objects.filter(job_id=job_id).exists()


def test_ocorrencia_do_job_apagado_fica_sem_job(tenant: Tenant) -> None:
    fora = pronto(tenant, expirou_ha_dias=400)
    agendamento = Agendamento.objects.create(
        tenant=tenant,
        tipo="vendas",
        periodo="mes_anterior",
        cron="0 3 1 * *",
        prazo=timedelta(hours=3),
    )
    ocorrencia = Ocorrencia.objects.create(
        agendamento=agendamento,
        tenant=tenant,
        planejado_para=timezone.now() - timedelta(days=401),
        estado=EstadoOcorrencia.DISPARADA,
        prazo_em=timezone.now() - timedelta(days=401),
        job_id=fora,
    )

    assert retencao.expurgar() == 1

    ocorrencia.refresh_from_db()
    assert ocorrencia.job_id is None
    assert not existe(fora)


def test_registros_de_tarefa_do_django_q_velhos_somem(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_RETER_DIAS = 30
    agora = timezone.now()
    for dias in (31, 2):
        Task.objects.create(
            id=uuid.uuid4().hex,
            name=f"tarefa-{dias}",
            func="relatorios.tasks.executar_relatorio",
            started=agora - timedelta(days=dias),
            stopped=agora - timedelta(days=dias),
            success=False,
        )

    retencao.expurgar()

    assert list(Task.objects.values_list("name", flat=True)) == ["tarefa-2"]


def test_lotes_apagam_tudo_o_que_venceu(tenant: Tenant) -> None:
    ids = [pronto(tenant, expirou_ha_dias=100) for _ in range(25)]

    assert retencao.expurgar(lote=4) == 25

    assert not RelatorioJob.objects.filter(pk__in=ids).exists()


@pytest.mark.django_db(transaction=True)
def test_dois_expurgos_simultaneos_apagam_cada_linha_uma_vez(tenant: Tenant) -> None:
    ids = [pronto(tenant, expirou_ha_dias=100) for _ in range(60)]
    barreira = threading.Barrier(2)
    apagados: list[int] = []
    erros: list[BaseException] = []

    def expurgar() -> None:
        try:
            barreira.wait()
            apagados.append(retencao.expurgar(lote=5))
        except BaseException as erro:  # reported by the assertion below
            erros.append(erro)
        finally:
            connection.close()

    fios = [threading.Thread(target=expurgar) for _ in range(2)]
    for fio in fios:
        fio.start()
    for fio in fios:
        fio.join(60)

    assert erros == []
    assert sum(apagados) == 60
    assert not RelatorioJob.objects.filter(pk__in=ids).exists()
    assert not RelatorioTentativa.objects.filter(job_id__in=ids).exists()


def test_suporte_ve_a_politica_na_pagina_inicial_do_admin(
    client: Client, settings: Any
) -> None:
    settings.RELATORIOS_RETER_DIAS = 45
    admin = Usuario.objects.create_superuser("admin-retencao", password="x" * 12)
    client.force_login(admin)
    html = client.get("/admin/").content.decode()
    assert "Retenção: jobs prontos são apagados 45 dias depois" in html
    assert "Pendentes e em execução nunca são apagados" in html


def test_clusters_encerrados_ou_mortos_ha_mais_que_a_janela_somem(
    settings: Any,
) -> None:
    settings.RELATORIOS_RETER_DIAS = 30
    ha = {d: timezone.now() - timedelta(days=d) for d in (1, 31, 40)}
    encerrado_velho = Cluster.objects.create(
        host="a", pid=1, batimento_em=ha[31], encerrado_em=ha[31]
    )
    morto_velho = Cluster.objects.create(
        host="b", pid=2, batimento_em=ha[40], morto_em=ha[31]
    )
    encerrado_ontem = Cluster.objects.create(
        host="c", pid=3, batimento_em=ha[1], encerrado_em=ha[1]
    )
    # Silent for long but never declared dead: a peer must hand back its
    # messages first.
    calado = Cluster.objects.create(host="d", pid=4, batimento_em=ha[40])
    vivo = Cluster.objects.create(host="e", pid=5, iniciado_em=ha[40])

    retencao.expurgar()

    assert set(Cluster.objects.values_list("pk", flat=True)) == {
        encerrado_ontem.pk,
        calado.pk,
        vivo.pk,
    }
    assert not Cluster.objects.filter(
        pk__in=[encerrado_velho.pk, morto_velho.pk]
    ).exists()


@pytest.mark.parametrize(
    "consulta",
    [
        # Retention, for the deliveries of the jobs it deletes.
        "UPDATE relatorio_entregas SET job_id = NULL WHERE job_id IN (SELECT 7)",
        # The admin's search "=job__id".
        str(Entrega.objects.filter(job__id=7).query),
    ],
)
def test_entregas_de_um_job_se_acham_pelo_indice(consulta: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {consulta}")
        plano = "\n".join(linha for (linha,) in cursor.fetchall())

    assert "relatorio_entregas_job" in plano
