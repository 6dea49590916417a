"""The worker's side of the lifecycle, the sweep and the tenant limits, in-process."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from django_q.models import OrmQ

from relatorios.jobs import ciclo, execucao, pedidos, suporte, varredura
from relatorios.jobs.ciclo import Tentativa
from relatorios.jobs.pedidos import LimiteDePendentes
from relatorios.models import (
    Desfecho,
    EstadoDoJob,
    RelatorioJob,
    RelatorioParcial,
    RelatorioTentativa,
    Tenant,
)
from tests import helpers, processos
from tests.tipos_de_teste import Lento

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31"}


def submeter(tenant: Tenant, dia: int = 31, tipo: str = "vendas") -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo=tipo,
        params_brutos={"inicio": "2026-01-01", "fim": f"2026-01-{dia:02d}"},
        usuario_id=None,
    ).job.id


def reivindicar(job_id: int) -> Tentativa:
    job = ciclo.reivindicar(job_id=job_id)
    assert job is not None
    return job.tentativa


def envelhecer_batimento(job_id: int, segundos: int = 3600) -> None:
    RelatorioJob.objects.filter(pk=job_id).update(
        heartbeat_em=timezone.now() - timedelta(seconds=segundos)
    )


def mensagens() -> dict[int, Any]:
    """job id -> lock of its queue message(s)."""
    return {m.task["args"][0]: m.lock for m in OrmQ.objects.all()}


def tentativa_velha_nao_escreve(velha: Tentativa) -> list[Any]:
    return [
        ciclo.batimento(tentativa=velha),
        ciclo.registrar_progresso(
            tentativa=velha, progresso=50, partes=[1], feitas=1, parcial={}
        ),
        ciclo.concluir(tentativa=velha, resultado={"velho": 1}, validade_s=60),
        ciclo.falhar(tentativa=velha, erro="velho", detalhe=None),
        ciclo.adiar(tentativa=velha, erro="velho", detalhe=None),
        ciclo.devolver(tentativa=velha),
    ]


def historico(job_id: int) -> list[tuple[int, str | None, str | None]]:
    return [
        (t.numero, t.desfecho, t.erro)
        for t in RelatorioTentativa.objects.filter(job_id=job_id).order_by(
            "iniciado_em"
        )
    ]


@pytest.mark.django_db
def test_historico_guarda_cada_tentativa_e_como_acabou(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    primeira = ciclo.reivindicar(job_id=job_id, trabalhador="host-a:11")
    ciclo.adiar(tentativa=primeira.tentativa, erro="caiu a conexão", detalhe=None)
    RelatorioJob.objects.filter(pk=job_id).update(proxima_tentativa_em=None)
    reivindicar(job_id)
    envelhecer_batimento(job_id)
    varredura.varrer()
    RelatorioJob.objects.filter(pk=job_id).update(proxima_tentativa_em=None)
    terceira = reivindicar(job_id)
    aberta = RelatorioTentativa.objects.get(job_id=job_id, numero=3)
    ciclo.concluir(tentativa=terceira, resultado={}, validade_s=60)

    assert historico(job_id) == [
        (1, Desfecho.ADIADO, "caiu a conexão"),
        (2, Desfecho.ORFAO, "o worker parou de responder"),
        (3, Desfecho.PRONTO, None),
    ]
    assert aberta.terminado_em is None
    assert RelatorioTentativa.objects.get(job_id=job_id, numero=1).trabalhador == (
        "host-a:11"
    )
    assert RelatorioTentativa.objects.filter(terminado_em__isnull=True).count() == 0


@pytest.mark.django_db
def test_historico_registra_a_intervencao_do_suporte(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    reivindicar(job_id)
    suporte.marcar_como_falhou(job_id=job_id, motivo="dados corrompidos")
    assert historico(job_id) == [(1, Desfecho.INTERROMPIDO, "dados corrompidos")]


@pytest.mark.django_db
def test_depois_da_varredura_a_tentativa_antiga_nao_muda_nada(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    velha = reivindicar(job_id)
    envelhecer_batimento(job_id)
    varredura.varrer()
    RelatorioJob.objects.filter(pk=job_id).update(proxima_tentativa_em=None)
    nova = reivindicar(job_id)

    assert tentativa_velha_nao_escreve(velha) == [
        False,
        False,
        False,
        False,
        None,
        False,
    ]
    assert ciclo.concluir(tentativa=nova, resultado={"novo": 1}, validade_s=60)
    job = helpers.job(job_id)
    assert (job.status, job.resultado, job.tentativas) == (
        EstadoDoJob.PRONTO,
        {"novo": 1},
        2,
    )


@pytest.mark.django_db
def test_job_recomecado_cerca_o_worker_antigo_mesmo_com_o_mesmo_numero(
    tenant: Tenant,
) -> None:
    # A restart resets tentativas (seed 000), so the attempt number alone would
    # let the old worker write into the new run; the claim timestamp does not.
    job_id = submeter(tenant)
    velha = reivindicar(job_id)
    assert suporte.marcar_como_falhou(job_id=job_id, motivo="suporte").feita
    submeter(tenant)
    nova = reivindicar(job_id)

    assert nova.numero == velha.numero == 1
    assert tentativa_velha_nao_escreve(velha) == [
        False,
        False,
        False,
        False,
        None,
        False,
    ]
    assert ciclo.batimento(tentativa=nova)


@pytest.mark.django_db
def test_orfao_volta_para_pendente_com_mensagem_atrasada(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    reivindicar(job_id)
    OrmQ.objects.all().delete()
    envelhecer_batimento(job_id)

    feita = varredura.varrer()

    job = helpers.job(job_id)
    assert feita.orfaos_devolvidos == 1
    assert job.status == EstadoDoJob.PENDENTE
    assert job.erro == "o worker parou de responder"
    assert job.proxima_tentativa_em > timezone.now()
    assert mensagens() == {job_id: job.proxima_tentativa_em}
    assert ciclo.reivindicar(job_id=job_id) is None  # not due yet


@pytest.mark.django_db
@override_settings(RELATORIOS_MAX_TENTATIVAS=2)
def test_orfao_na_ultima_tentativa_falha_dizendo_por_que(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    reivindicar(job_id)
    RelatorioJob.objects.filter(pk=job_id).update(tentativas=2)
    envelhecer_batimento(job_id)

    feita = varredura.varrer()

    job = helpers.job(job_id)
    assert feita.orfaos_falhos == 1
    assert job.status == EstadoDoJob.FALHOU
    assert job.erro == "o worker parou de responder (após 2 tentativas)"
    assert job.concluido_em is not None


@pytest.mark.django_db
def test_batimento_recente_nao_e_orfao(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    tentativa = reivindicar(job_id)
    envelhecer_batimento(job_id, segundos=30)

    assert varredura.varrer().orfaos_devolvidos == 0
    assert ciclo.batimento(tentativa=tentativa)


@pytest.mark.django_db(transaction=True)
def test_varreduras_simultaneas_devolvem_cada_orfao_uma_vez(tenant: Tenant) -> None:
    ids = [submeter(tenant, dia) for dia in range(1, 21)]
    RelatorioJob.objects.filter(pk__in=ids).update(
        status=EstadoDoJob.EXECUTANDO,
        tentativas=1,
        iniciado_em=timezone.now(),
        heartbeat_em=timezone.now() - timedelta(hours=1),
    )
    OrmQ.objects.all().delete()
    barreira = threading.Barrier(4)
    resultados: list[varredura.Varredura] = []

    def varrer() -> None:
        barreira.wait()
        try:
            resultados.append(varredura.varrer())
        finally:
            connection.close()

    fios = [threading.Thread(target=varrer) for _ in range(4)]
    for fio in fios:
        fio.start()
    for fio in fios:
        fio.join(30)

    assert sum(r.orfaos_devolvidos for r in resultados) == 20
    assert OrmQ.objects.count() == 20
    assert set(mensagens()) == set(ids)


@pytest.mark.django_db
def test_falha_transitoria_e_adiada_com_backoff_ate_o_maximo(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    OrmQ.objects.all().delete()
    for numero in (1, 2):
        tentativa = reivindicar(job_id)
        assert tentativa.numero == numero
        assert ciclo.adiar(tentativa=tentativa, erro="caiu", detalhe="tb") == "pendente"
        job = helpers.job(job_id)
        assert (job.status, job.erro) == (EstadoDoJob.PENDENTE, "caiu")
        assert mensagens() == {job_id: job.proxima_tentativa_em}
        OrmQ.objects.all().delete()
        RelatorioJob.objects.filter(pk=job_id).update(proxima_tentativa_em=None)
    ultima = reivindicar(job_id)

    assert ciclo.adiar(tentativa=ultima, erro="caiu", detalhe="tb") == "falhou"
    job = helpers.job(job_id)
    assert (job.status, job.erro, job.tentativas) == (
        EstadoDoJob.FALHOU,
        "caiu (após 3 tentativas)",
        3,
    )
    assert OrmQ.objects.count() == 0


@override_settings(RELATORIOS_BACKOFF_S=2, RELATORIOS_BACKOFF_MAX_S=30)
@pytest.mark.parametrize(
    ("numero", "minimo", "maximo"), [(1, 2, 4), (2, 4, 8), (5, 30, 30)]
)
def test_atraso_cresce_exponencialmente_com_jitter_e_teto(
    numero: int, minimo: float, maximo: float
) -> None:
    atrasos = {ciclo.atraso_de_retentativa(numero) for _ in range(50)}
    assert all(minimo <= a <= maximo for a in atrasos)
    assert len(atrasos) > 1 or minimo == maximo


@pytest.mark.django_db
def test_devolver_nao_gasta_tentativa_e_guarda_o_checkpoint(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    OrmQ.objects.all().delete()
    tentativa = reivindicar(job_id)
    ciclo.registrar_progresso(
        tentativa=tentativa,
        progresso=50,
        partes=["a", "b"],
        feitas=1,
        parcial={"x": 1},
    )

    assert ciclo.devolver(tentativa=tentativa)

    job = helpers.job(job_id)
    assert (job.status, job.tentativas, job.progresso) == (EstadoDoJob.PENDENTE, 0, 50)
    assert job.checkpoint == {"partes": ["a", "b"], "feitas": 1}
    assert set(mensagens()) == {job_id}
    retomado = ciclo.reivindicar(job_id=job_id)
    assert retomado is not None
    assert retomado.checkpoint == {"partes": ["a", "b"], "parciais": [{"x": 1}]}


@pytest.mark.django_db
def test_checkpoint_acumula_as_partes_em_linhas_proprias(tenant: Tenant) -> None:
    """Each chunk's result is a row of its own and the job's checkpoint stays
    the same size: a job of n chunks writes n chunks of jsonb, not n²/2."""
    job_id = submeter(tenant)
    tentativa = reivindicar(job_id)
    grande = {"linhas": [[f"loja {i}", str(i * 1.5)] for i in range(2000)]}
    tamanhos = []
    for feitas in (1, 2, 3):
        assert ciclo.registrar_progresso(
            tentativa=tentativa,
            progresso=25 * feitas,
            partes=[0, 1, 2, 3],
            feitas=feitas,
            parcial={"i": feitas, **grande},
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_column_size(checkpoint) FROM relatorio_jobs WHERE id = %s",
                [job_id],
            )
            tamanhos.append(cursor.fetchone()[0])
    job = helpers.job(job_id)
    assert job.checkpoint == {"partes": [0, 1, 2, 3], "feitas": 3}
    assert job.progresso == 75
    assert len(set(tamanhos)) == 1
    assert [
        p["i"]
        for p in RelatorioParcial.objects.filter(job_id=job_id)
        .order_by("parte")
        .values_list("parcial", flat=True)
    ] == [1, 2, 3]

    # The next attempt gets them back in order; finishing deletes them.
    assert ciclo.devolver(tentativa=tentativa)
    retomado = ciclo.reivindicar(job_id=job_id)
    assert retomado is not None
    assert retomado.checkpoint is not None
    assert [p["i"] for p in retomado.checkpoint["parciais"]] == [1, 2, 3]
    assert ciclo.concluir(tentativa=retomado.tentativa, resultado={}, validade_s=60)
    assert not RelatorioParcial.objects.filter(job_id=job_id).exists()


@pytest.mark.django_db
def test_checkpoint_incompleto_nao_e_retomado(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    tentativa = reivindicar(job_id)
    for feitas in (1, 2):
        ciclo.registrar_progresso(
            tentativa=tentativa,
            progresso=feitas * 33,
            partes=[0, 1, 2],
            feitas=feitas,
            parcial={"i": feitas},
        )
    RelatorioParcial.objects.filter(job_id=job_id, parte=0).delete()
    assert ciclo.devolver(tentativa=tentativa)

    retomado = ciclo.reivindicar(job_id=job_id)

    assert retomado is not None
    assert retomado.checkpoint is None


@pytest.mark.django_db
def test_falhar_apaga_os_resultados_parciais(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    tentativa = reivindicar(job_id)
    ciclo.registrar_progresso(
        tentativa=tentativa, progresso=50, partes=[0, 1], feitas=1, parcial={}
    )
    assert RelatorioParcial.objects.filter(job_id=job_id).exists()

    assert ciclo.falhar(tentativa=tentativa, erro="x", detalhe=None)

    assert not RelatorioParcial.objects.filter(job_id=job_id).exists()


@pytest.mark.django_db
@override_settings(RELATORIOS_MAX_EXECUTANDO_POR_TENANT=2)
def test_so_duas_vagas_por_tenant_e_a_terceira_espera_sem_mensagem(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    ids = [submeter(tenant, dia) for dia in (1, 2, 3)]
    de_outro = submeter(outro_tenant)

    assert set(mensagens()) == {ids[0], ids[1], de_outro}
    assert helpers.job(ids[2]).enfileirado_em is None
    primeira = reivindicar(ids[0])
    reivindicar(ids[1])
    reivindicar(de_outro)

    assert ciclo.concluir(tentativa=primeira, resultado={}, validade_s=60)

    assert ids[2] in mensagens()
    assert helpers.job(ids[2]).enfileirado_em is not None


@pytest.mark.django_db
@override_settings(RELATORIOS_MAX_EXECUTANDO_POR_TENANT=1)
def test_reivindicacao_acima_do_limite_e_recusada_e_o_job_espera_vaga(
    tenant: Tenant,
) -> None:
    a, b = submeter(tenant, 1), submeter(tenant, 2)
    reivindicar(a)
    RelatorioJob.objects.filter(pk=b).update(enfileirado_em=timezone.now())

    assert ciclo.reivindicar(job_id=b) is None
    assert helpers.job(b).status == EstadoDoJob.PENDENTE
    assert helpers.job(b).enfileirado_em is None


@pytest.mark.django_db(transaction=True)
@override_settings(RELATORIOS_MAX_EXECUTANDO_POR_TENANT=2)
def test_reivindicacoes_simultaneas_respeitam_o_limite_do_tenant(
    tenant: Tenant,
) -> None:
    ids = [submeter(tenant, dia) for dia in range(1, 11)]
    RelatorioJob.objects.filter(pk__in=ids).update(enfileirado_em=timezone.now())
    barreira = threading.Barrier(len(ids))
    ganhos: list[int] = []

    def tentar(job_id: int) -> None:
        barreira.wait()
        try:
            if ciclo.reivindicar(job_id=job_id) is not None:
                ganhos.append(job_id)
        finally:
            connection.close()

    fios = [threading.Thread(target=tentar, args=(i,)) for i in ids]
    for fio in fios:
        fio.start()
    for fio in fios:
        fio.join(30)

    assert len(ganhos) == 2
    assert RelatorioJob.objects.filter(status=EstadoDoJob.EXECUTANDO).count() == 2


@pytest.mark.django_db
@override_settings(RELATORIOS_MAX_PENDENTES_POR_TENANT=3)
def test_acima_do_limite_de_pendentes_pedido_novo_e_recusado(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    for dia in (1, 2, 3):
        submeter(tenant, dia)

    with pytest.raises(LimiteDePendentes):
        submeter(tenant, 4)
    repetido = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-02"},
        usuario_id=None,
    )
    assert not repetido.criado
    assert RelatorioJob.objects.filter(tenant=tenant).count() == 3
    assert submeter(outro_tenant, 4)


@pytest.mark.django_db(transaction=True)
@override_settings(RELATORIOS_MAX_PENDENTES_POR_TENANT=5)
def test_pedidos_simultaneos_nao_passam_do_limite_de_pendentes(tenant: Tenant) -> None:
    barreira = threading.Barrier(12)
    recusados: list[int] = []

    def pedir(dia: int) -> None:
        barreira.wait()
        try:
            submeter(tenant, dia)
        except LimiteDePendentes:
            recusados.append(dia)
        finally:
            connection.close()

    fios = [threading.Thread(target=pedir, args=(d,)) for d in range(1, 13)]
    for fio in fios:
        fio.start()
    for fio in fios:
        fio.join(30)

    assert RelatorioJob.objects.filter(status=EstadoDoJob.PENDENTE).count() == 5
    assert len(recusados) == 7


@pytest.mark.django_db
@override_settings(RELATORIOS_REENFILEIRAR_APOS_S=60)
def test_mensagem_perdida_e_reposta_e_a_presente_nao(tenant: Tenant) -> None:
    perdido, presente = submeter(tenant, 1), submeter(tenant, 2)
    RelatorioJob.objects.filter(pk__in=[perdido, presente]).update(
        enfileirado_em=timezone.now() - timedelta(minutes=5)
    )
    OrmQ.objects.filter(
        pk__in=[m.pk for m in OrmQ.objects.all() if m.task["args"][0] == perdido]
    ).delete()

    assert varredura.varrer().reenfileirados == 1

    assert sorted(m.task["args"][0] for m in OrmQ.objects.all()) == sorted(
        [perdido, presente]
    )
    assert varredura.varrer().reenfileirados == 0


@pytest.mark.django_db
def test_reexecutar_so_falhou_travado_ou_expirado(tenant: Tenant) -> None:
    falhou, travado, expirado, valido, pendente = (
        submeter(tenant, d) for d in range(1, 6)
    )
    RelatorioJob.objects.filter(pk=falhou).update(status=EstadoDoJob.FALHOU, erro="x")
    reivindicar(travado)
    envelhecer_batimento(travado)
    for job_id, expira in ((expirado, -60), (valido, 3600)):
        RelatorioJob.objects.filter(pk=job_id).update(
            status=EstadoDoJob.PRONTO,
            resultado={},
            expira_em=timezone.now() + timedelta(seconds=expira),
        )

    feitos = {
        j: suporte.reexecutar(job_id=j).feita
        for j in (falhou, travado, expirado, valido, pendente)
    }

    assert feitos == {
        falhou: True,
        travado: True,
        expirado: True,
        valido: False,
        pendente: False,
    }
    for job_id in (falhou, travado, expirado):
        job = helpers.job(job_id)
        assert (job.status, job.tentativas, job.erro, job.resultado) == (
            EstadoDoJob.PENDENTE,
            0,
            None,
            None,
        )
    assert suporte.reexecutar(job_id=987654).motivo == "job não encontrado"


@pytest.mark.django_db
def test_reexecutar_cerca_o_worker_travado(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    velha = reivindicar(job_id)
    envelhecer_batimento(job_id)
    assert suporte.reexecutar(job_id=job_id).feita
    reivindicar(job_id)
    assert not ciclo.concluir(tentativa=velha, resultado={"velho": 1}, validade_s=60)


@pytest.mark.django_db
@override_settings(RELATORIOS_MAX_PENDENTES_POR_TENANT=1)
def test_reexecutar_respeita_o_limite_de_pendentes(tenant: Tenant) -> None:
    falhou = submeter(tenant, 1)
    RelatorioJob.objects.filter(pk=falhou).update(status=EstadoDoJob.FALHOU)
    submeter(tenant, 2)
    acao = suporte.reexecutar(job_id=falhou)
    assert not acao.feita
    assert "limite" in acao.motivo
    assert helpers.job(falhou).status == EstadoDoJob.FALHOU


@pytest.mark.django_db
def test_marcar_como_falhou_exige_motivo_e_cerca_o_worker(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    tentativa = reivindicar(job_id)
    assert not suporte.marcar_como_falhou(job_id=job_id, motivo="  ").feita
    assert suporte.marcar_como_falhou(job_id=job_id, motivo="dados corrompidos").feita
    assert not ciclo.concluir(tentativa=tentativa, resultado={}, validade_s=60)
    job = helpers.job(job_id)
    assert (job.status, job.erro) == (EstadoDoJob.FALHOU, "dados corrompidos")
    assert job.erro_detalhe == "marcado como falhou pelo suporte"
    assert job.checkpoint is None
    assert not suporte.marcar_como_falhou(job_id=job_id, motivo="de novo").feita


@pytest.mark.django_db
def test_expirar_resultado_faz_o_proximo_pedido_recalcular(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    tentativa = reivindicar(job_id)
    ciclo.concluir(tentativa=tentativa, resultado={"a": 1}, validade_s=3600)
    assert suporte.expirar_resultado(job_id=job_id).feita
    assert not suporte.expirar_resultado(job_id=job_id).feita
    assert pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).criado


@pytest.mark.parametrize(
    ("excecao", "transitoria", "mensagem"),
    [
        (
            psycopg.errors.QueryCanceled(
                "canceling statement due to statement timeout"
            ),
            True,
            "o relatório excedeu o tempo limite de consulta",
        ),
        (
            psycopg.errors.DeadlockDetected("deadlock detected"),
            True,
            "conflito temporário no banco de dados",
        ),
        (
            psycopg.errors.SerializationFailure("could not serialize"),
            True,
            "conflito temporário no banco de dados",
        ),
        (
            psycopg.OperationalError("server closed the connection unexpectedly"),
            True,
            "a conexão com o banco de dados falhou durante o relatório",
        ),
        (
            ZeroDivisionError("division by zero"),
            False,
            "ZeroDivisionError: division by zero",
        ),
        (KeyError("loja"), False, "KeyError: 'loja'"),
    ],
)
def test_classificacao_das_falhas(
    excecao: BaseException, transitoria: bool, mensagem: str
) -> None:
    assert execucao.transitoria(excecao) is transitoria
    assert execucao.mensagem_para_tenant(excecao) == mensagem


class Demorado(Lento):
    tipo = "teste_demorado"
    timeout_s = 600


def test_checagem_recusa_tipo_com_timeout_acima_do_global() -> None:
    from relatorios.apps import verificar_timeouts

    extras = [*processos.TIPOS_DE_TESTE.split(","), f"{__name__}.Demorado"]
    with override_settings(RELATORIOS_TIPOS_EXTRAS=extras):
        erros = verificar_timeouts()
    assert [e.id for e in erros] == ["relatorios.E001"]
    assert "teste_demorado" in erros[0].msg
    assert verificar_timeouts() == []
