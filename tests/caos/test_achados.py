"""What the soak found, each pinned by a test that does not need the soak."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from relatorios.agendamentos import agenda, alertas, disparo
from relatorios.banco.comum import agora_do_banco
from relatorios.jobs import ciclo, consultas, pedidos
from relatorios.models import (
    Alerta,
    Entrega,
    EstadoDoJob,
    EstadoEntrega,
    Ocorrencia,
    RelatorioJob,
)
from relatorios.notificacoes import saida, vagas
from tests import helpers
from tests.agendamentos.test_entrega import CONTABILIDADE, disparada, pronto

pytestmark = pytest.mark.django_db(transaction=True)


def test_ocorrencia_entregue_tem_suas_entregas_mesmo_se_o_job_reinicia_no_meio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checker marks a pronto occurrence delivered and writes its
    deliveries in one transaction, but in two statements: a request that
    restarts the (expired) job commits between them, the second statement
    no longer sees the job pronto, writes nothing, and the occurrence stays
    marked delivered with no delivery at all (the soak's
    `agendados_nao_entregues`: "entregue=True, 0 de 2 entregas")."""
    tenant = helpers.criar_tenant()
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(
        expira_em=timezone.now() - timedelta(seconds=1)
    )
    reinicios: list[str] = []

    def reiniciar() -> None:
        # A manager asks for the same report: its expired result starts over.
        try:
            reinicios.append(
                pedidos.submeter(
                    tenant_id=tenant.pk,
                    tipo="vendas",
                    params_brutos=ocorrencia.params,
                    usuario_id=None,
                ).job.status
            )
        finally:
            connection.close()

    escrever = saida.enfileirar_entrega_agendada

    def entre_os_dois_comandos(*, ocorrencia_id: int) -> int:
        fio = threading.Thread(target=reiniciar)
        fio.start()
        fio.join(2)  # committed by now, unless our transaction holds it back
        return escrever(ocorrencia_id=ocorrencia_id)

    monkeypatch.setattr(saida, "enfileirar_entrega_agendada", entre_os_dois_comandos)

    alertas.verificar()
    ocorrencia.refresh_from_db()

    entregas = Entrega.objects.filter(ocorrencia=ocorrencia).count()
    assert (ocorrencia.entregue_em is not None, entregas) == (
        True,
        len(CONTABILIDADE),
    )
    helpers.esperar(lambda: reinicios, descricao="o pedido reiniciar o job")
    assert reinicios == [EstadoDoJob.PENDENTE]


def test_email_reenviado_apos_envio_sem_registro_tem_o_mesmo_message_id(
    smtp: Any, ajustes: Any
) -> None:
    """An attempt the SMTP server accepted but that could not be recorded
    (here the client gave up waiting for the server's answer; in the soak a
    worker killed mid-send) is sent again: the copy must carry the first
    one's Message-ID, derived from the delivery's `mensagem_id`, so that a
    mail client, and the soak's count, can tell it is the same message
    (`emails_repetidos`). Before, each attempt made a new one."""
    ajustes(**smtp.ambiente(), EMAIL_TIMEOUT=1)
    tenant = helpers.criar_tenant()
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    alertas.verificar()
    smtp.resposta_atrasada_s = 2.0  # kept, answered after the client's timeout
    helpers.entregar_em_voo()
    assert set(Entrega.objects.values_list("estado", "entregue_em")) == {
        (EstadoEntrega.PENDENTE, None)
    }
    assert len(smtp.recebidas) == len(CONTABILIDADE)
    smtp.resposta_atrasada_s = 0.0
    Entrega.objects.update(proxima_em=timezone.now() - timedelta(seconds=1))
    vagas.despachar(tenant_id=tenant.pk)
    helpers.entregar_em_voo()

    assert set(Entrega.objects.values_list("estado", flat=True)) == {
        EstadoEntrega.ENTREGUE
    }
    time.sleep(0.2)
    for entrega in Entrega.objects.all():
        [email] = entrega.destinatarios
        ids = [str(m["Message-ID"]).strip() for m in smtp.para(email)]
        assert len(ids) == 2  # at least once: the copy reached the server
        assert ids[0] == ids[1] == f"<{entrega.mensagem_id}@localhost>"


def terminar_o_proprio_backend() -> None:
    """pg_terminate_backend of this thread's backend, from another
    connection, as an operator (or a failover) would, mid-request."""
    connection.ensure_connection()
    assert connection.connection is not None
    pid = connection.connection.info.backend_pid
    ajustes = connection.settings_dict
    with psycopg.connect(
        dbname=ajustes["NAME"],
        host=ajustes["HOST"] or None,
        port=ajustes["PORT"] or None,
        user=ajustes["USER"] or None,
        autocommit=True,
    ) as outra:
        # The timeout: wait until the backend has really gone.
        outra.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])


def depois_de_perder_a_conexao(funcao: Any) -> Any:
    def perde_e_chama(**kwargs: Any) -> Any:
        terminar_o_proprio_backend()
        return funcao(**kwargs)

    return perde_e_chama


def test_pedido_que_perde_a_conexao_e_503_e_o_proximo_tem_conexao_nova(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The soak's `pg_terminate_backend` of a web worker's backend in the
    middle of a request (after the connection's health check): the view's
    next statement raised OperationalError and the client got a 500. It is
    a 503 with Retry-After (the API's JSON `erro`, a page elsewhere), and the
    next request on the same worker thread gets a fresh connection."""
    tenant = helpers.criar_tenant()
    usuario, token = helpers.criar_usuario(tenant)
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-31"},
        usuario_id=None,
    ).job.id
    api = helpers.cliente_com_token(token)
    monkeypatch.setattr(
        consultas, "estado_do_job", depois_de_perder_a_conexao(consultas.estado_do_job)
    )

    perdida = api.get(f"/relatorios/jobs/{job_id}")
    monkeypatch.undo()
    seguinte = api.get(f"/relatorios/jobs/{job_id}")

    assert (perdida.status_code, perdida["Retry-After"]) == (503, "1")
    assert "banco de dados" in perdida.json()["erro"]
    assert (seguinte.status_code, seguinte.json()["id"]) == (200, job_id)

    pagina = Client()
    pagina.force_login(usuario)
    monkeypatch.setattr(
        consultas, "jobs_recentes", depois_de_perder_a_conexao(consultas.jobs_recentes)
    )
    perdida = pagina.get("/painel/")
    monkeypatch.undo()
    seguinte = pagina.get("/painel/")

    assert (perdida.status_code, perdida["Retry-After"]) == (503, "1")
    assert perdida["Content-Type"].startswith("text/html")
    assert "Tente de novo" in perdida.content.decode()
    assert seguinte.status_code == 200


def agendamento_de_cada_segundo(ajustes: Any) -> Any:
    """A schedule firing every second with a 30-second deadline, on the real
    clock (the rule below compares the firing's instant with the attempts')."""
    ajustes(RELATORIOS_CRON_SEGUNDOS=True, RELATORIOS_INTERVALO_MINIMO_MIN=0)
    tenant = helpers.criar_tenant()
    helpers.criar_lojas(tenant, "L001", "L002")
    return helpers.criar_agendamento(
        tenant, cron="* * * * * *", prazo=timedelta(seconds=30)
    )


def disparar_a_proxima(agendamento: Any) -> Ocorrencia:
    planejado = agendamento.proximo_disparo
    while agora_do_banco() < planejado:
        time.sleep(0.05)
    disparo.disparar(agora=agora_do_banco())
    agenda.pausar(agendamento_id=agendamento.pk)  # no more firings meanwhile
    return Ocorrencia.objects.get(agendamento=agendamento, planejado_para=planejado)


def executar(job_id: int) -> None:
    """The job's attempt, claimed and finished as a worker would (its row in
    the attempts' ledger included), its result valid for a minute."""
    reivindicado = ciclo.reivindicar(job_id=job_id)
    assert reivindicado is not None
    assert ciclo.concluir(
        tentativa=reivindicado.tentativa, resultado={"linhas": []}, validade_s=60
    )


def expirar_e_pedir_de_novo(ocorrencia: Ocorrencia) -> None:
    """The result expires and a manager asks for the same report: the shared
    job starts over, pending, before any checker pass looked."""
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(
        expira_em=timezone.now() - timedelta(seconds=1)
    )
    submissao = pedidos.submeter(
        tenant_id=ocorrencia.tenant_id,
        tipo="vendas",
        params_brutos=ocorrencia.params,
        usuario_id=None,
    )
    assert (submissao.job.id, submissao.reiniciado) == (ocorrencia.job_id, True)


def test_ocorrencia_servida_por_resultado_ja_pronto_nao_alerta_se_ele_expira(
    ajustes: Any,
) -> None:
    """A firing deduplicated with a job already pronto is served at once.
    If no checker pass settles it before that shared result expires and
    another request restarts the job, the deadline check judged the job as
    it then was (pending) and opened a false "ainda na fila" alert (the
    soak's `alertas_apos_resultado_expirado`)."""
    agendamento = agendamento_de_cada_segundo(ajustes)
    params = agenda.params_da_ocorrencia(
        agendamento, agendamento.proximo_disparo, agendamento.tenant.fuso_horario
    )
    compartilhado = pedidos.submeter(
        tenant_id=agendamento.tenant_id,
        tipo="vendas",
        params_brutos=params,
        usuario_id=None,
    ).job.id
    executar(compartilhado)
    ocorrencia = disparar_a_proxima(agendamento)
    assert ocorrencia.job_id == compartilhado
    expirar_e_pedir_de_novo(ocorrencia)

    alertas.verificar(agora=ocorrencia.prazo_em + timedelta(seconds=1))

    assert list(Alerta.objects.filter(ocorrencia=ocorrencia)) == []
    ocorrencia.refresh_from_db()
    assert ocorrencia.conferida


def test_ocorrencia_pronta_no_prazo_nao_alerta_se_o_resultado_expira_depois(
    ajustes: Any,
) -> None:
    """The same with a job that the firing submitted and that became pronto
    in time: the checker must judge the occurrence by what happened before
    its deadline (the attempts' ledger), not by the job's state when it
    looks."""
    agendamento = agendamento_de_cada_segundo(ajustes)
    ocorrencia = disparar_a_proxima(agendamento)
    assert ocorrencia.job_id is not None
    executar(ocorrencia.job_id)
    expirar_e_pedir_de_novo(ocorrencia)

    alertas.verificar(agora=ocorrencia.prazo_em + timedelta(seconds=1))

    assert list(Alerta.objects.filter(ocorrencia=ocorrencia)) == []


def test_ocorrencia_que_nao_ficou_pronta_no_prazo_ainda_alerta(ajustes: Any) -> None:
    """The rule's other side: a job pronto only after the deadline opens
    (and closes) the alert."""
    agendamento = agendamento_de_cada_segundo(ajustes)
    ocorrencia = disparar_a_proxima(agendamento)
    assert ocorrencia.job_id is not None
    Ocorrencia.objects.filter(pk=ocorrencia.pk).update(
        prazo_em=timezone.now() - timedelta(seconds=1)
    )
    executar(ocorrencia.job_id)

    alertas.verificar(agora=agora_do_banco())

    [alerta] = Alerta.objects.filter(ocorrencia=ocorrencia)
    assert "depois do prazo" in alerta.motivo
