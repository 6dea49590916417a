"""Lock order between the web's schedule actions, the firing and the checker.

Each test stalls one side on purpose at the moment that used to deadlock, with
real connections (and, for the firing, real qcluster processes), then lets go
and checks that both sides finished and nothing was lost.
"""

from __future__ import annotations

import contextlib
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, connections, transaction

from relatorios.agendamentos import agenda, alertas, disparo
from relatorios.banco import comum
from relatorios.models import Agendamento, EstadoOcorrencia, Ocorrencia
from tests import helpers, processos
from tests.agendamentos.test_agendamentos_processos import (
    RAPIDO,
    agendar,
    segundos_a_frente,
)

pytestmark = [pytest.mark.django_db(transaction=True)]


def conexao() -> psycopg.Connection[Any]:
    """A connection of its own to the test database, outside Django's."""
    dados = connection.settings_dict
    return psycopg.connect(
        host=dados.get("HOST") or "127.0.0.1",
        port=dados.get("PORT") or 5432,
        user=dados.get("USER") or "postgres",
        password=dados.get("PASSWORD") or None,
        dbname=dados["NAME"],
        autocommit=False,
    )


@contextlib.contextmanager
def lojas_travadas() -> Iterator[None]:
    """erp_lojas locked until the block ends: a submit naming stores waits."""
    with conexao() as trava:
        trava.execute("LOCK TABLE erp_lojas IN ACCESS EXCLUSIVE MODE")
        yield
        trava.commit()


def esperando(trecho: str) -> int:
    """Backends waiting on a lock while running a statement containing `trecho`."""
    with conexao() as olhar:
        return olhar.execute(
            """
            SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'
               AND query LIKE %s
            """,
            [f"%{trecho}%"],
        ).fetchone()[0]


def status_http(metodo: str, url: str, token: str) -> int:
    pedido = urllib.request.Request(url, method=metodo)
    pedido.add_header("Authorization", f"Token {token}")
    try:
        with urllib.request.urlopen(pedido, timeout=60) as resposta:
            return int(resposta.status)
    except urllib.error.HTTPError as erro:
        return erro.code


def em_paralelo(funcao: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    saida: dict[str, Any] = {}

    def rodar() -> None:
        try:
            saida["valor"] = funcao()
        except Exception as exc:
            saida["erro"] = exc
        finally:
            connections.close_all()

    linha = threading.Thread(target=rodar)
    linha.start()
    return linha, saida


@pytest.mark.processos
@pytest.mark.parametrize(
    ("metodo", "sufixo", "esperado"),
    [
        ("POST", "/pausar", 200),
        ("DELETE", "", 204),
    ],
)
def test_pausar_ou_excluir_durante_um_disparo_nao_trava_e_o_disparo_fica(
    metodo: str,
    sufixo: str,
    esperado: int,
    cluster: Callable[..., processos.Processo],
    servidor: str,
    ajustes: Callable[..., None],
) -> None:
    ajustes(**RAPIDO, RELATORIOS_DISPARO_TOLERANCIA_S=60)
    tenant = helpers.criar_tenant()
    helpers.criar_lojas(tenant, "L001")
    _, token = helpers.criar_usuario(tenant)
    cron, instantes = segundos_a_frente(1, 1)
    agendamento = agendar(tenant, cron, lojas=["L001"], prazo=timedelta(minutes=5))
    url = f"{servidor}/relatorios/agendamentos/{agendamento.pk}{sufixo}"
    with lojas_travadas():
        cluster()
        cluster()
        # The firing inserted its occurrence and waits in the submit's store check.
        helpers.esperar(
            lambda: esperando("relatorios_submeter") == 1,
            timeout=30,
            descricao="o disparo parar nas lojas",
        )
        linha, saida = em_paralelo(lambda: status_http(metodo, url, token))
        # The pause records the due slot and so waits on the firing's row.
        helpers.esperar(
            lambda: esperando("relatorio_ocorrencias") >= 1,
            descricao="a pausa esperar o disparo",
        )
    linha.join(60)

    assert "erro" not in saida
    assert saida["valor"] == esperado
    agendamento.refresh_from_db()
    assert agendamento.ativo is False
    ocorrencias = list(Ocorrencia.objects.filter(agendamento=agendamento))
    assert [(o.planejado_para, o.estado) for o in ocorrencias] == [
        (instantes[0], EstadoOcorrencia.DISPARADA)
    ]
    assert ocorrencias[0].job_id is not None


def test_verificador_e_pausa_ao_mesmo_tempo_nao_travam(
    ajustes: Callable[..., None],
) -> None:
    ajustes(RELATORIOS_CRON_SEGUNDOS=1, RELATORIOS_INTERVALO_MINIMO_MIN=0)
    tenant = helpers.criar_tenant()
    agendamento = agendar(tenant, "* * * * * *", prazo=timedelta(seconds=1))
    agora = comum.agora_do_banco()
    # Checked up to ten seconds ago: every slot since is due and unfired.
    Agendamento.objects.filter(pk=agendamento.pk).update(
        verificado_ate=agora - timedelta(seconds=10),
        proxima_verificacao=agora - timedelta(seconds=8),
    )
    agendamento.refresh_from_db()
    # The checker records the first five in one transaction; the fifth is
    # held by someone else, so it waits there with four rows written.
    planejados = agenda.disparos_entre(
        agendamento.cron,
        tenant.fuso_horario,
        agendamento.verificado_ate,
        agendamento.verificado_ate + timedelta(seconds=5),
    )
    with conexao() as outro:
        outro.execute(
            """
            INSERT INTO relatorio_ocorrencias
                   (agendamento_id, tenant_id, planejado_para, params, estado,
                    motivo, prazo_em, conferida)
            VALUES (%s, %s, %s, '{}', 'nao_disparada', 'outro', %s, false)
            """,
            [agendamento.pk, tenant.pk, planejados[-1], planejados[-1]],
        )
        verificador, do_verificador = em_paralelo(
            lambda: alertas.verificar(
                agora=planejados[-1] + timedelta(seconds=1, milliseconds=500)
            )
        )
        helpers.esperar(
            lambda: esperando("relatorio_ocorrencias") == 1,
            descricao="o verificador esperar a quinta ocorrência",
        )
        pausa, da_pausa = em_paralelo(
            lambda: agenda.pausar(agendamento_id=agendamento.pk)
        )
        helpers.esperar(
            lambda: esperando("relatorio_") == 2,
            descricao="a pausa esperar também",
        )
        outro.rollback()
    verificador.join(30)
    pausa.join(30)

    assert "erro" not in do_verificador
    assert do_verificador["valor"].falhas == 0
    assert "erro" not in da_pausa
    assert da_pausa["valor"] is True
    agendamento.refresh_from_db()
    assert agendamento.ativo is False
    registrados = Ocorrencia.objects.filter(agendamento=agendamento)
    assert set(registrados.values_list("planejado_para", flat=True)) >= set(planejados)


def test_executar_agora_duas_vezes_na_mesma_transacao() -> None:
    tenant = helpers.criar_tenant()
    helpers.criar_lojas(tenant, "L001")
    agendamento = helpers.criar_agendamento(tenant)

    with transaction.atomic():
        primeira = disparo.executar_agora(agendamento_id=agendamento.pk)
        segunda = disparo.executar_agora(agendamento_id=agendamento.pk)

    assert primeira.pk != segunda.pk
    assert primeira.planejado_para < segunda.planejado_para
    assert {primeira.estado, segunda.estado} == {EstadoOcorrencia.DISPARADA}
