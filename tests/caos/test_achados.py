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

from relatorios.agendamentos import alertas
from relatorios.jobs import consultas, pedidos
from relatorios.models import Entrega, EstadoEntrega, RelatorioJob, Status
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
    assert reinicios == [Status.PENDENTE]


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
