"""Fault tests with real processes: kill -9, SIGSTOP, dropped connections,
timeouts, shutdowns, two clusters at once. Each asserts the final state of
every job involved."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from django.db import connection
from django.db.models import Count
from django.forms.models import model_to_dict
from django_q.models import OrmQ

from relatorios import tipos
from relatorios.jobs import ciclo, execucao, pedidos
from relatorios.models import (
    Desfecho,
    EstadoDoJob,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
    Tenant,
)
from relatorios.tipos.base import Contexto
from tests import helpers
from tests.processos import Processo, ambiente, iniciar_web, requisitar

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

# Fast knobs for every test here, in this process and in the clusters.
RAPIDO = {
    "RELATORIOS_ORFAO_APOS_S": 4,
    "RELATORIOS_VARREDURA_S": 0.5,
    "RELATORIOS_BATIMENTO_S": 0.5,
    "RELATORIOS_BACKOFF_S": 0.2,
    "RELATORIOS_BACKOFF_MAX_S": 2,
    "RELATORIOS_REENFILEIRAR_APOS_S": 3,
    "RELATORIOS_DESLIGAMENTO_S": 1,
}
UTC = ZoneInfo("UTC")


@pytest.fixture(autouse=True)
def rapido(ajustes: Callable[..., None]) -> None:
    ajustes(**RAPIDO)


@pytest.fixture
def execucoes(transactional_db: None) -> Iterator[Callable[[int], list[tuple]]]:
    """teste_execucoes: one row per chunk started by the teste_contado type."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE TABLE IF NOT EXISTS teste_execucoes (
                id bigint GENERATED ALWAYS AS IDENTITY, job_id bigint,
                parte text, pid int, em timestamptz DEFAULT clock_timestamp())
            """
        )
        cursor.execute("TRUNCATE teste_execucoes")

    def do_job(job_id: int) -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT parte, pid, em FROM teste_execucoes"
                " WHERE job_id = %s ORDER BY id",
                [job_id],
            )
            return cursor.fetchall()

    yield do_job
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE teste_execucoes")


def submeter(
    tenant: Tenant, tipo: str = "teste_contado", meses: int = 3, ano: int = 2026
) -> int:
    fim = date(ano, meses, 1) + timedelta(days=31)
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo=tipo,
        params_brutos={
            "inicio": f"{ano}-01-01",
            "fim": (fim.replace(day=1) - timedelta(days=1)).isoformat(),
        },
        usuario_id=None,
    ).job.id


def terminado(job_id: int) -> RelatorioJob | None:
    job = helpers.job(job_id)
    return job if job.status in (EstadoDoJob.PRONTO, EstadoDoJob.FALHOU) else None


def esperar_fim(job_id: int, timeout: float = 90) -> RelatorioJob:
    return helpers.esperar(
        lambda: terminado(job_id), timeout=timeout, descricao=f"job {job_id} terminar"
    )


def esperado(tenant: Tenant, job_id: int) -> dict[str, Any]:
    """The result of an uninterrupted run, computed in this process."""
    job = helpers.job(job_id)
    relatorio = tipos.obter(job.tipo)
    ctx = Contexto(job_id=0, tenant_id=tenant.pk, fuso_horario=tenant.fuso_horario)
    return execucao.calcular(relatorio, ctx, job.params, timeout_s=60)


def com_vendas(tenant: Tenant) -> None:
    loja = helpers.criar_lojas(tenant, "L1")[0]
    vendedor, produto = helpers.criar_vendedor(tenant), helpers.criar_produto(tenant)
    for dia in range(0, 180, 3):
        helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime(2026, 1, 1, 12, tzinfo=UTC) + timedelta(days=dia),
            valor=f"{dia + 1}.50",
        )


def pid_da_primeira_parte(execucoes: Callable[[int], list[tuple]], job_id: int) -> int:
    linhas = helpers.esperar(lambda: execucoes(job_id), descricao="primeira parte")
    return int(linhas[0][1])


def test_worker_morto_com_kill_9_e_recuperado(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=1)
    com_vendas(tenant)
    job_id = submeter(tenant, meses=3)
    cluster()
    pid = pid_da_primeira_parte(execucoes, job_id)

    os.kill(pid, signal.SIGKILL)
    morto_em = datetime.now(UTC)
    job = esperar_fim(job_id)

    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 2
    assert job.resultado == esperado(tenant, job_id)
    assert job.erro is None
    assert list(
        RelatorioTentativa.objects.filter(job_id=job_id)
        .order_by("numero")
        .values_list("desfecho", flat=True)
    ) == [Desfecho.ORFAO, Desfecho.PRONTO]
    retomada = next(em for _, p, em in execucoes(job_id) if p != pid)
    print(f"recuperação (kill -9 do worker -> job de volta): {retomada - morto_em}")


def test_cluster_inteiro_morto_e_outro_assume(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=1)
    job_id = submeter(tenant, meses=3)
    primeiro = cluster()
    pid_da_primeira_parte(execucoes, job_id)

    primeiro.matar()
    assert helpers.job(job_id).status == EstadoDoJob.EXECUTANDO
    morto_em = datetime.now(UTC)
    cluster()
    job = esperar_fim(job_id)

    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 2
    assert job.resultado == esperado(tenant, job_id)
    retomada = execucoes(job_id)[-1][2]
    print(f"recuperação (kill -9 do cluster -> job de volta): {retomada - morto_em}")


def test_retomada_refaz_no_maximo_a_parte_interrompida(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=0.6)
    com_vendas(tenant)
    job_id = submeter(tenant, meses=6)
    cluster()
    linhas = helpers.esperar(
        lambda: feitas if len(feitas := execucoes(job_id)) >= 3 else None,
        descricao="três partes começadas",
    )

    os.kill(int(linhas[0][1]), signal.SIGKILL)
    job = esperar_fim(job_id)

    vezes = Counter(parte for parte, _, _ in execucoes(job_id))
    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 2
    assert set(vezes) == {f"2026-{m:02d}-01" for m in range(1, 7)}
    assert sorted(vezes.values()) in ([1] * 6, [1] * 5 + [2])
    assert job.resultado == esperado(tenant, job_id)
    assert job.checkpoint is None


def test_dois_clusters_duzentos_jobs_cada_um_roda_uma_vez_no_limite(
    cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(
        RELATORIOS_TESTE_PAUSA_S=0.02,
        RELATORIOS_MAX_PENDENTES_POR_TENANT=100,
        RELATORIOS_MAX_EXECUTANDO_POR_TENANT=2,
    )
    tenants = [helpers.criar_tenant() for _ in range(5)]
    ids = [
        submeter(tenant, meses=1, ano=2000 + i) for tenant in tenants for i in range(40)
    ]
    maximo: Counter[int] = Counter()
    parar = threading.Event()

    def amostrar() -> None:
        with psycopg.connect(ambiente()["DATABASE_URL"], autocommit=True) as conexao:
            while not parar.is_set():
                for tenant_id, n in conexao.execute(
                    "SELECT tenant_id, count(*) FROM relatorio_jobs"
                    " WHERE status = 'executando' GROUP BY tenant_id"
                ):
                    maximo[tenant_id] = max(maximo[tenant_id], n)
                time.sleep(0.01)

    amostrador = threading.Thread(target=amostrar)
    amostrador.start()
    try:
        cluster()
        cluster()
        helpers.esperar(
            lambda: (
                RelatorioJob.objects.filter(status=EstadoDoJob.PRONTO).count() == 200
            ),
            timeout=180,
            descricao="200 jobs prontos",
        )
    finally:
        parar.set()
        amostrador.join()

    assert set(RelatorioJob.objects.values_list("status", "tentativas")) == {
        (EstadoDoJob.PRONTO, 1)
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT job_id, count(*) FROM teste_execucoes GROUP BY job_id")
        assert dict(cursor.fetchall()) == dict.fromkeys(ids, 1)
        cursor.execute("SELECT count(DISTINCT pid) FROM teste_execucoes")
        assert cursor.fetchone()[0] >= 3  # both clusters did work
    assert max(maximo.values()) == 2
    assert set(maximo) == {t.pk for t in tenants}


def test_conexao_do_worker_derrubada_e_o_job_refeito(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=2)
    job_id = submeter(tenant, meses=2)
    cluster()
    pid_da_primeira_parte(execucoes, job_id)
    with psycopg.connect(ambiente()["DATABASE_URL"], autocommit=True) as conexao:
        derrubadas = helpers.esperar(
            lambda: conexao.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                # A chunk's statement follows its limits in the same message.
                " WHERE query LIKE '%%SELECT pg_sleep%%' AND pid <> pg_backend_pid()"
                # Only this suite's: other databases on the server are not ours.
                " AND datname = current_database()"
            ).fetchall(),
            descricao="a consulta do relatório",
        )
    assert derrubadas == [(True,)]

    job = esperar_fim(job_id)
    seguinte = esperar_fim(submeter(tenant, meses=1, ano=2027))

    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 2
    assert seguinte.status == EstadoDoJob.PRONTO
    assert seguinte.tentativas == 1


def test_consulta_acima_do_tempo_limite_falha_com_motivo_e_libera_o_worker(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(
        RELATORIOS_TESTE_PAUSA_S=3,
        RELATORIOS_TESTE_TIMEOUT_S=1,
        RELATORIOS_MAX_TENTATIVAS=2,
        RELATORIOS_WORKERS=1,
    )
    job_id = submeter(tenant, meses=1)
    cluster()

    job = esperar_fim(job_id)
    assert job.status == EstadoDoJob.FALHOU
    assert (
        job.erro == "o relatório excedeu o tempo limite de consulta (após 2 tentativas)"
    )
    assert "statement timeout" in job.erro_detalhe
    assert len(execucoes(job_id)) == 2

    ajustes(RELATORIOS_TESTE_PAUSA_S=0)
    seguinte = esperar_fim(submeter(tenant, tipo="teste_lento", meses=1))
    assert seguinte.status == EstadoDoJob.PRONTO


def test_parada_forcada_do_django_q_falha_com_motivo_e_repoe_o_worker(
    tenant: Tenant, cluster: Callable[..., Processo], ajustes: Any
) -> None:
    # Stuck in Python (not SQL): only django-q2's hard stop (SIGALRM) ends it.
    ajustes(
        RELATORIOS_TESTE_DORMIR_S=30,
        RELATORIOS_TESTE_TIMEOUT_S=1,
        RELATORIOS_MARGEM_HARD_STOP_S=1,
        RELATORIOS_MAX_TENTATIVAS=2,
        RELATORIOS_WORKERS=1,
    )
    job_id = submeter(tenant, tipo="teste_dorminhoco")
    processo = cluster()

    job = esperar_fim(job_id)
    seguinte = esperar_fim(submeter(tenant, tipo="teste_lento", meses=1))

    assert job.status == EstadoDoJob.FALHOU
    assert job.erro == (
        "o relatório excedeu o tempo limite e foi interrompido (após 2 tentativas)"
    )
    assert seguinte.status == EstadoDoJob.PRONTO
    assert "reincarnated worker" in processo.texto_do_log()


def test_zumbi_retomado_nao_muda_nada(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=1.5, RELATORIOS_WORKERS=2)
    job_id = submeter(tenant, meses=3)
    processo = cluster()
    zumbi = pid_da_primeira_parte(execucoes, job_id)

    os.kill(zumbi, signal.SIGSTOP)
    try:
        job = esperar_fim(job_id)
        antes = model_to_dict(helpers.job(job_id))
    finally:
        os.kill(zumbi, signal.SIGCONT)
    helpers.esperar(
        lambda: "desfecho=perdido duracao_ms" in processo.texto_do_log(),
        descricao="o zumbi desistir",
    )

    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 2
    assert model_to_dict(helpers.job(job_id)) == antes
    assert list(
        RelatorioTentativa.objects.filter(job_id=job_id)
        .order_by("numero")
        .values_list("desfecho", flat=True)
    ) == [Desfecho.ORFAO, Desfecho.PRONTO]
    assert {pid for _, pid, _ in execucoes(job_id)} - {zumbi}


def test_sigterm_devolve_o_job_na_hora_depois_do_prazo(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    # A long orphan timeout: only the hand-back can explain a prompt pendente.
    ajustes(RELATORIOS_TESTE_PAUSA_S=1, RELATORIOS_ORFAO_APOS_S=600)
    job_id = submeter(tenant, meses=4)
    primeiro = cluster()
    helpers.esperar(lambda: len(execucoes(job_id)) >= 2, descricao="duas partes")

    primeiro.sinal(signal.SIGTERM, grupo=False)
    primeiro.popen.wait(60)

    devolvido = helpers.job(job_id)
    assert devolvido.status == EstadoDoJob.PENDENTE
    assert devolvido.tentativas == 0
    assert devolvido.checkpoint["feitas"] >= 1
    assert (
        RelatorioParcial.objects.filter(job_id=job_id).count()
        == devolvido.checkpoint["feitas"]
    )
    segundo = cluster()
    job = esperar_fim(job_id)
    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 1
    assert "job retomado do checkpoint" in segundo.texto_do_log()


def test_sigterm_deixa_terminar_o_job_dentro_do_prazo(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=1, RELATORIOS_DESLIGAMENTO_S=30)
    job_id = submeter(tenant, meses=2)
    processo = cluster()
    pid_da_primeira_parte(execucoes, job_id)

    processo.sinal(signal.SIGTERM, grupo=False)
    processo.popen.wait(60)

    job = helpers.job(job_id)
    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 1


def test_sigterm_no_grupo_inteiro_devolve_o_job_na_hora(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_TESTE_PAUSA_S=1, RELATORIOS_ORFAO_APOS_S=600)
    job_id = submeter(tenant, meses=4)
    processo = cluster()
    pid = pid_da_primeira_parte(execucoes, job_id)

    processo.sinal(signal.SIGTERM, grupo=True)
    helpers.esperar(lambda: not os.path.exists(f"/proc/{pid}"), descricao="worker sair")
    # The main process exits too (django-q2's own handler would hang forever
    # in Event.set() on the sentinel the same signal killed).
    processo.popen.wait(30)

    job = helpers.job(job_id)
    assert job.status == EstadoDoJob.PENDENTE
    assert job.tentativas == 0


def test_mensagem_perdida_e_reposta_pela_varredura(
    tenant: Tenant, cluster: Callable[..., Processo], execucoes: Any
) -> None:
    job_id = submeter(tenant, tipo="teste_lento", meses=1)
    OrmQ.objects.all().delete()  # the broker lost it

    cluster()
    job = esperar_fim(job_id)

    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 1


def test_retentativa_atrasada_espera_a_vez_e_sobrevive_ao_reinicio(
    tenant: Tenant, cluster: Callable[..., Processo], ajustes: Any
) -> None:
    ajustes(RELATORIOS_BACKOFF_S=3, RELATORIOS_BACKOFF_MAX_S=3)
    job_id = submeter(tenant, tipo="teste_lento", meses=1)
    # What a cluster that hit a transient error and then died leaves behind.
    reivindicado = ciclo.reivindicar(job_id=job_id)
    OrmQ.objects.all().delete()
    assert ciclo.adiar(tentativa=reivindicado.tentativa, erro="caiu", detalhe=None)
    adiado = helpers.job(job_id)

    cluster()
    job = esperar_fim(job_id)

    assert job.status == EstadoDoJob.PRONTO
    assert job.tentativas == 2
    assert job.iniciado_em >= adiado.proxima_tentativa_em


def test_tenant_com_cem_jobs_nao_atrasa_o_job_de_outro(
    cluster: Callable[..., Processo], ajustes: Any
) -> None:
    ajustes(
        RELATORIOS_TESTE_PAUSA_S=0.5,
        RELATORIOS_MAX_PENDENTES_POR_TENANT=200,
        RELATORIOS_WORKERS=2,
    )
    grande, pequeno = helpers.criar_tenant(), helpers.criar_tenant()
    do_grande = [submeter(grande, "teste_lento", 1, 2000 + i) for i in range(100)]
    cluster()
    helpers.esperar(
        lambda: RelatorioJob.objects.filter(status=EstadoDoJob.EXECUTANDO).count() == 2,
        descricao="o grande ocupar os dois workers",
    )
    do_pequeno = submeter(pequeno, "teste_lento", 1)

    job = esperar_fim(do_pequeno)

    antes = RelatorioJob.objects.filter(
        pk__in=do_grande, iniciado_em__lt=job.iniciado_em
    ).count()
    # Two were running when it arrived; each worker finishes at most one more.
    assert antes <= 4
    assert (
        RelatorioJob.objects.filter(
            pk__in=do_grande, status=EstadoDoJob.PENDENTE
        ).count()
        > 50
    )


def test_rajada_de_mil_pedidos_de_vinte_tenants(
    cluster: Callable[..., Processo], pasta_saida: Any, ajustes: Any
) -> None:
    ajustes(RELATORIOS_MAX_PENDENTES_POR_TENANT=20, RELATORIOS_WORKERS=2)
    tenants = [helpers.criar_tenant() for _ in range(20)]
    tokens = [helpers.criar_usuario(t)[1] for t in tenants]
    servidor, url = iniciar_web(pasta_saida / "web.log")
    recusas: Counter[int] = Counter()
    aceitos: list[int] = []
    trava = threading.Lock()

    def cliente(indice: int) -> None:
        for i in range(50):
            corpo = (
                f'{{"inicio": "{2000 + i}-01-01", "fim": "{2000 + i}-01-31"}}'.encode()
            )
            while True:
                codigo, cabecalhos, resposta = requisitar(
                    "POST",
                    f"{url}/relatorios/vendas",
                    token=tokens[indice],
                    corpo=corpo,
                )
                if codigo != 429:
                    break
                assert "Retry-After" in cabecalhos
                assert resposta["erro"]
                with trava:
                    recusas[indice] += 1
                time.sleep(0.2)  # a patient client; the server says 10 s
            assert codigo == 202
            with trava:
                aceitos.append(resposta["id"])

    try:
        fios = [threading.Thread(target=cliente, args=(i,)) for i in range(20)]
        for fio in fios:
            fio.start()
        # The clusters start once every tenant has met its cap (50 requests
        # each against 20 pending): a deterministic burst, whatever the
        # machine's speed, and the cap must have held under it.
        helpers.esperar(
            lambda: len(recusas) == 20, timeout=120, descricao="todos recusados"
        )
        pendentes = (
            RelatorioJob.objects.values("tenant")
            .annotate(n=Count("id"))
            .values_list("n", flat=True)
        )
        assert set(pendentes) == {20}
        cluster()
        cluster()
        for fio in fios:
            fio.join(600)
        helpers.esperar(
            lambda: (
                RelatorioJob.objects.filter(status=EstadoDoJob.PRONTO).count() == 1000
            ),
            timeout=300,
            descricao="mil jobs prontos",
        )
    finally:
        servidor.parar()

    assert len(set(aceitos)) == 1000
    assert RelatorioJob.objects.count() == 1000
    assert set(RelatorioJob.objects.values_list("status", flat=True)) == {
        EstadoDoJob.PRONTO
    }
