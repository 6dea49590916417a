from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from relatorios.agendamentos import agenda, alertas, disparo
from relatorios.jobs import pedidos, suporte
from relatorios.models import (
    Agendamento,
    Alerta,
    Entrega,
    EstadoDoJob,
    EstadoOcorrencia,
    Ocorrencia,
    RelatorioJob,
)
from relatorios.notificacoes import webhooks
from relatorios.tipos import normalizacao
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers

SP = ZoneInfo("America/Sao_Paulo")
NY = ZoneInfo("America/New_York")


def utc(ano: int, mes: int, dia: int, hora: int = 0, minuto: int = 0) -> datetime:
    return datetime(ano, mes, dia, hora, minuto, tzinfo=UTC)


criar = helpers.criar_agendamento


# --- Relative periods and the cron on the tenant's wall clock ------------------


@pytest.mark.parametrize(
    ("periodo", "dia", "esperado"),
    [
        ("ontem", date(2026, 3, 1), (date(2026, 2, 28), date(2026, 2, 28))),
        ("semana_anterior", date(2026, 3, 4), (date(2026, 2, 23), date(2026, 3, 1))),
        ("semana_anterior", date(2026, 3, 2), (date(2026, 2, 23), date(2026, 3, 1))),
        ("mes_anterior", date(2026, 3, 1), (date(2026, 2, 1), date(2026, 2, 28))),
        ("mes_anterior", date(2024, 3, 15), (date(2024, 2, 1), date(2024, 2, 29))),
        ("mes_anterior", date(2026, 1, 1), (date(2025, 12, 1), date(2025, 12, 31))),
        (
            "mes_corrente_ate_ontem",
            date(2026, 3, 10),
            (date(2026, 3, 1), date(2026, 3, 9)),
        ),
        (
            "mes_corrente_ate_ontem",
            date(2026, 3, 1),
            (date(2026, 2, 1), date(2026, 2, 28)),
        ),
        ("ano_anterior", date(2026, 1, 1), (date(2025, 1, 1), date(2025, 12, 31))),
    ],
)
def test_periodo_relativo_vira_datas_concretas(
    periodo: str, dia: date, esperado: tuple[date, date]
) -> None:
    assert agenda.periodo_concreto(periodo, dia) == esperado


def test_mes_anterior_disparado_no_dia_1_em_sao_paulo_e_fevereiro() -> None:
    # 03:00 in São Paulo on March 1st is 06:00 UTC; a UTC reading of the day
    # would still be right here, but 23:30 local on Feb 28th is March 1st UTC.
    agendamento = Agendamento(periodo="mes_anterior", agrupar="mes", lojas=[])
    params = agenda.params_da_ocorrencia(
        agendamento, utc(2026, 3, 1, 6), "America/Sao_Paulo"
    )
    assert (params["inicio"], params["fim"]) == ("2026-02-01", "2026-02-28")
    tarde = agenda.params_da_ocorrencia(
        Agendamento(periodo="ontem", agrupar="dia", lojas=[]),
        utc(2026, 3, 1, 2, 30),
        "America/Sao_Paulo",
    )
    assert tarde["inicio"] == "2026-02-27"


def test_cron_no_fuso_do_tenant() -> None:
    disparos = agenda.disparos_entre(
        "0 3 1 * *", "America/Sao_Paulo", utc(2026, 1, 15), utc(2026, 4, 15)
    )
    assert disparos == [utc(2026, 2, 1, 6), utc(2026, 3, 1, 6), utc(2026, 4, 1, 6)]
    manaus = agenda.disparos_entre(
        "0 3 1 * *", "America/Manaus", utc(2026, 1, 15), utc(2026, 2, 15)
    )
    assert manaus == [utc(2026, 2, 1, 7)]


def test_horario_que_nao_existe_no_dia_do_horario_de_verao_dispara_uma_vez() -> None:
    # São Paulo, 2018-11-04: clocks jumped from 00:00 to 01:00.
    disparos = agenda.disparos_entre(
        "30 0 * * *", "America/Sao_Paulo", utc(2018, 11, 3, 12), utc(2018, 11, 5, 12)
    )
    locais = [d.astimezone(SP) for d in disparos]
    assert [d.day for d in locais] == [4, 5]
    assert locais[0].hour == 1  # the gap's 00:30 happens at 01:30 -02
    # New York, 2026-03-08: 02:30 does not exist.
    ny = agenda.disparos_entre(
        "30 2 * * *", "America/New_York", utc(2026, 3, 7, 12), utc(2026, 3, 9, 12)
    )
    assert len(ny) == 2
    assert ny[0].astimezone(NY).hour == 3


def test_hora_repetida_no_fim_do_horario_de_verao_dispara_uma_vez() -> None:
    # São Paulo, 2019-02-16 24:00 -> 23:00: 23:30 happened twice.
    disparos = agenda.disparos_entre(
        "30 23 * * *", "America/Sao_Paulo", utc(2019, 2, 16, 12), utc(2019, 2, 17, 12)
    )
    assert disparos == [utc(2019, 2, 17, 1, 30)]  # the first 23:30 (-02)
    ny = agenda.disparos_entre(
        "30 1 * * *", "America/New_York", utc(2026, 11, 1), utc(2026, 11, 2)
    )
    assert ny == [utc(2026, 11, 1, 5, 30)]  # 01:30 EDT, not again at 01:30 EST


def test_cron_de_meia_em_meia_hora_atravessa_o_salto_sem_repetir_instante() -> None:
    disparos = agenda.disparos_entre(
        "*/30 * * * *", "America/New_York", utc(2026, 3, 8, 5), utc(2026, 3, 8, 9)
    )
    assert len(disparos) == len(set(disparos))
    assert disparos == sorted(disparos)
    # 05:30Z (00:30 EST) .. 09:00Z: 07:00Z is reached once though two local
    # times (02:00 in the gap and 03:00 EDT) land on it.
    assert disparos.count(utc(2026, 3, 8, 7)) == 1


# --- Creating schedules --------------------------------------------------------------


@pytest.mark.parametrize(
    ("campos", "campo"),
    [
        ({"cron": "todo dia"}, "cron"),
        ({"cron": "0 3 * *"}, "cron"),
        ({"cron": "0 3 31 2 *"}, "cron"),
        ({"periodo": "mes_que_vem"}, "periodo"),
        ({"prazo": 0}, "prazo_minutos"),
        ({"prazo": -5}, "prazo_minutos"),
        ({"prazo": "3h"}, "prazo_minutos"),
        ({"prazo": 10**30}, "prazo_minutos"),
        ({"prazo": -(10**30)}, "prazo_minutos"),
        ({"tipo": "inexistente"}, "tipo"),
        ({"agrupar": "ano"}, "agrupar"),
        ({"lojas": ["L999"]}, "lojas"),
        ({"destinatarios": ["não é email"]}, "destinatarios"),
        ({"recuperacao": "todas"}, "recuperacao"),
    ],
)
def test_agendamento_invalido_nomeia_o_campo_e_nao_cria_nada(
    tenant, campos, campo
) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        criar(tenant, **campos)
    assert erro.value.campo == campo
    assert not Agendamento.objects.exists()


def test_agendamento_criado_sabe_o_proximo_disparo(tenant) -> None:
    agendamento = criar(tenant, destinatarios=["Contab@Rede.com", "contab@rede.com"])
    assert agendamento.destinatarios == ["contab@rede.com"]
    assert agendamento.proximo_disparo is not None
    local = agendamento.proximo_disparo.astimezone(SP)
    assert (local.day, local.hour, local.minute) == (1, 3, 0)
    proximos = agenda.proximos_disparos(agendamento, 3)
    assert len(proximos) == 3
    assert proximos == sorted(proximos)


# --- Firing ---------------------------------------------------------------------------


def test_disparo_cria_uma_ocorrencia_e_o_mesmo_job_do_pedido_manual(tenant) -> None:
    agendamento = criar(tenant, agrupar="mes")
    planejado = agendamento.proximo_disparo
    disparo.disparar(agora=planejado + timedelta(seconds=20))
    disparo.disparar(agora=planejado + timedelta(seconds=40))
    ocorrencia = Ocorrencia.objects.get()
    assert ocorrencia.estado == EstadoOcorrencia.DISPARADA
    assert ocorrencia.planejado_para == planejado
    assert ocorrencia.prazo_em == planejado + timedelta(hours=3)
    fim = planejado.astimezone(SP).date() - timedelta(days=1)
    assert ocorrencia.params["fim"] == fim.isoformat()
    manual = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={
            "inicio": fim.replace(day=1).isoformat(),
            "fim": fim.isoformat(),
            "agrupar": "mes",
        },
        usuario_id=None,
    )
    assert manual.criado is False
    assert manual.job.id == ocorrencia.job_id
    job = RelatorioJob.objects.get(pk=ocorrencia.job_id)
    assert job.chave == normalizacao.chave(tenant.pk, "vendas", job.params)
    agendamento.refresh_from_db()
    assert agendamento.proximo_disparo > planejado


def test_recuperacao_ultima_roda_so_a_mais_recente_e_registra_as_perdidas(
    tenant,
) -> None:
    agendamento = criar(tenant, cron="0 3 * * *", periodo="ontem")
    primeiro = agendamento.proximo_disparo
    resultado = disparo.disparar(agora=primeiro + timedelta(days=4, hours=1))
    ocorrencias = list(Ocorrencia.objects.order_by("planejado_para"))
    assert [o.estado for o in ocorrencias] == ["pulada"] * 4 + ["disparada"]
    assert (resultado.puladas, resultado.disparadas) == (4, 1)
    assert RelatorioJob.objects.count() == 1
    assert ocorrencias[-1].job_id is not None


def test_recuperacao_pular_nao_roda_nenhuma_perdida(tenant) -> None:
    agendamento = criar(tenant, cron="0 3 * * *", periodo="ontem", recuperacao="pular")
    primeiro = agendamento.proximo_disparo
    disparo.disparar(agora=primeiro + timedelta(days=2, hours=1))
    assert set(Ocorrencia.objects.values_list("estado", flat=True)) == {"pulada"}
    assert Ocorrencia.objects.count() == 3
    assert not RelatorioJob.objects.exists()


def test_disparo_recusado_registra_o_motivo(tenant, settings) -> None:
    settings.RELATORIOS_MAX_PENDENTES_POR_TENANT = 0
    agendamento = criar(tenant)
    disparo.disparar(agora=agendamento.proximo_disparo + timedelta(seconds=1))
    ocorrencia = Ocorrencia.objects.get()
    assert ocorrencia.estado == EstadoOcorrencia.RECUSADA
    assert ocorrencia.motivo.startswith("429")
    assert ocorrencia.job_id is None


@pytest.mark.django_db(transaction=True)
def test_tres_disparadores_ao_mesmo_tempo_geram_uma_ocorrencia_e_um_job() -> None:
    tenant = helpers.criar_tenant()
    agendamento = criar(tenant)
    agora = agendamento.proximo_disparo + timedelta(seconds=5)
    barreira = threading.Barrier(3)
    erros: list[BaseException] = []

    def disparar() -> None:
        try:
            barreira.wait()
            disparo.disparar(agora=agora)
        except BaseException as exc:  # reported below
            erros.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=disparar) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert erros == []
    assert Ocorrencia.objects.count() == 1
    assert RelatorioJob.objects.count() == 1


# --- Absence alerts -------------------------------------------------------------------


def test_agendador_que_nunca_rodou_ainda_gera_o_alerta(tenant) -> None:
    agendamento = criar(tenant)
    planejado = agendamento.proximo_disparo
    antes = alertas.verificar(agora=planejado + timedelta(hours=2, minutes=59))
    assert antes.abertos == 0
    assert not Ocorrencia.objects.exists()
    depois = alertas.verificar(agora=planejado + timedelta(hours=3, minutes=1))
    assert depois.abertos == 1
    alerta = Alerta.objects.get()
    assert alerta.ocorrencia.estado == EstadoOcorrencia.NAO_DISPARADA
    assert alerta.ocorrencia.planejado_para == planejado
    assert "não foi disparada" in alerta.motivo
    assert alertas.verificar(agora=planejado + timedelta(hours=4)).abertos == 0
    assert Alerta.objects.count() == 1


def test_cada_ocorrencia_perdida_tem_seu_alerta(tenant) -> None:
    agendamento = criar(tenant, cron="0 3 * * *", periodo="ontem")
    primeiro = agendamento.proximo_disparo
    agora = primeiro + timedelta(days=3, hours=4)
    disparo.disparar(agora=agora)  # the catch-up runs, three were skipped
    resultado = alertas.verificar(agora=agora)
    # The catch-up (planned 4 h ago, deadline 3 h) is late and pending too.
    assert resultado.abertos == 4
    assert Alerta.objects.count() == Ocorrencia.objects.count() == 4


def test_job_pronto_no_prazo_nao_abre_alerta(tenant) -> None:
    agendamento = criar(tenant)
    planejado = agendamento.proximo_disparo
    disparo.disparar(agora=planejado)
    job_id = Ocorrencia.objects.get().job_id
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO, concluido_em=planejado + timedelta(minutes=30)
    )
    resultado = alertas.verificar(agora=planejado + timedelta(hours=1))
    assert (resultado.conferidas, resultado.abertos) == (1, 0)
    assert alertas.verificar(agora=planejado + timedelta(hours=5)).abertos == 0
    assert not Alerta.objects.exists()


def test_job_que_falhou_abre_o_alerta_antes_do_prazo_e_fecha_quando_fica_pronto(
    tenant,
) -> None:
    agendamento = criar(tenant)
    planejado = agendamento.proximo_disparo
    disparo.disparar(agora=planejado)
    job_id = Ocorrencia.objects.get().job_id
    assert alertas.verificar(agora=planejado + timedelta(minutes=5)).abertos == 0
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.FALHOU, erro="divisão por zero na loja L003"
    )
    assert alertas.verificar(agora=planejado + timedelta(minutes=10)).abertos == 1
    alerta = Alerta.objects.get()
    assert "divisão por zero" in alerta.motivo
    assert alerta.aberto
    assert suporte.reexecutar(job_id=job_id).feita
    assert alertas.verificar(agora=planejado + timedelta(minutes=20)).fechados == 0
    RelatorioJob.objects.filter(pk=job_id).update(status=EstadoDoJob.PRONTO)
    assert alertas.verificar(agora=planejado + timedelta(minutes=30)).fechados == 1
    alerta.refresh_from_db()
    assert not alerta.aberto
    assert alerta.fechado_por is None
    assert "automaticamente" in alerta.nota


def test_pausado_depois_de_vencido_ainda_alerta_pausado_antes_nao(
    tenant, settings
) -> None:
    settings.RELATORIOS_INTERVALO_MINIMO_MIN = 0
    agendamento = criar(tenant, cron="* * * * *", periodo="ontem")
    primeiro = agendamento.proximo_disparo
    # Paused (at the database's now, before the first firing): nothing owed.
    assert agenda.pausar(agendamento_id=agendamento.pk)
    assert alertas.verificar(agora=primeiro + timedelta(days=1)).abertos == 0
    assert agenda.retomar(agendamento_id=agendamento.pk)
    agendamento.refresh_from_db()
    # Now the firing of the next minute becomes due but no cluster fires it,
    # and the schedule is paused afterwards.
    Agendamento.objects.filter(pk=agendamento.pk).update(
        verificado_ate=agendamento.ativo_desde - timedelta(minutes=2)
    )
    assert agenda.pausar(agendamento_id=agendamento.pk)
    registradas = Ocorrencia.objects.filter(estado="nao_disparada").count()
    assert registradas >= 1
    resultado = alertas.verificar(agora=primeiro + timedelta(days=1))
    assert resultado.abertos == registradas


def test_outro_tenant_nao_pausa_o_agendamento(tenant, outro_tenant) -> None:
    agendamento = criar(tenant)
    assert not agenda.pausar(agendamento_id=agendamento.pk, tenant_id=outro_tenant.pk)
    agendamento.refresh_from_db()
    assert agendamento.ativo


def test_fechar_alerta_exige_nota_e_guarda_quem_fechou(tenant) -> None:
    usuario, _ = helpers.criar_usuario(None, is_staff=True)
    agendamento = criar(tenant)
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=4))
    alerta = Alerta.objects.get()
    assert not alertas.fechar(
        alerta_id=alerta.pk, usuario_id=usuario.pk, nota=" "
    ).feita
    assert alertas.fechar(
        alerta_id=alerta.pk, usuario_id=usuario.pk, nota="rodado à mão"
    ).feita
    assert not alertas.fechar(
        alerta_id=alerta.pk, usuario_id=usuario.pk, nota="de novo"
    ).feita
    alerta.refresh_from_db()
    assert (alerta.fechado_por_id, alerta.nota) == (usuario.pk, "rodado à mão")


def test_reexecutar_ocorrencia_sem_job_liga_o_job_e_o_alerta_fecha(tenant) -> None:
    agendamento = criar(tenant)
    planejado = agendamento.proximo_disparo
    alertas.verificar(agora=planejado + timedelta(hours=4))
    ocorrencia = Ocorrencia.objects.get()
    assert ocorrencia.job_id is None
    assert alertas.executar_ocorrencia(ocorrencia_id=ocorrencia.pk).feita
    ocorrencia.refresh_from_db()
    assert ocorrencia.job_id is not None
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(status=EstadoDoJob.PRONTO)
    assert alertas.verificar(agora=planejado + timedelta(hours=5)).fechados == 1


@pytest.mark.django_db(transaction=True)
def test_dois_verificadores_ao_mesmo_tempo_abrem_um_alerta(settings) -> None:
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = True
    tenant = helpers.criar_tenant()
    for porta in (9001, 9002):
        webhooks.registrar_webhook(
            tenant_id=tenant.pk,
            url=f"http://127.0.0.1:{porta}/ganchos",
            eventos=["alerta.aberto"],
            usuario_id=None,
        )
    agendamento = criar(
        tenant, cron="0 3 * * *", periodo="ontem", destinatarios=["a@rede.com"]
    )
    agora = agendamento.proximo_disparo + timedelta(days=2, hours=4)
    barreira = threading.Barrier(2)
    abertos: list[int] = []

    def verificar() -> None:
        try:
            barreira.wait()
            abertos.append(alertas.verificar(agora=agora).abertos)
        finally:
            connection.close()

    threads = [threading.Thread(target=verificar) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Alerta.objects.count() == 3
    assert sum(abertos) == 3
    # Per alert: one email, one delivery per subscribed endpoint.
    por_alerta = Counter(Entrega.objects.values_list("alerta_id", "canal"))
    assert len(por_alerta) == 6
    assert set(por_alerta.values()) == {1, 2}
    assert sum(n for (_, canal), n in por_alerta.items() if canal == "email") == 3


def test_pronto_depois_do_prazo_abre_e_fecha_o_alerta(tenant) -> None:
    agendamento = criar(tenant)
    planejado = agendamento.proximo_disparo
    disparo.disparar(agora=planejado)
    job_id = Ocorrencia.objects.get().job_id
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO, concluido_em=planejado + timedelta(hours=4)
    )
    resultado = alertas.verificar(agora=planejado + timedelta(hours=5))
    assert (resultado.abertos, resultado.fechados) == (1, 1)
    alerta = Alerta.objects.get()
    assert "depois do prazo" in alerta.motivo
    assert not alerta.aberto


def test_alerta_sem_webhooks_gera_um_email_a_cada_destinatario_e_ao_suporte(
    tenant, settings
) -> None:
    settings.RELATORIOS_EMAILS_SUPORTE = ["suporte@relatorios.com"]
    agendamento = criar(tenant, destinatarios=["contab@rede.com"])
    agora = agendamento.proximo_disparo + timedelta(hours=4)
    alertas.verificar(agora=agora)
    alertas.verificar(agora=agora + timedelta(minutes=1))
    entregas = Entrega.objects.order_by("id")
    assert {(e.canal, e.evento) for e in entregas} == {("email", "alerta.aberto")}
    assert [e.destinatarios for e in entregas] == [
        ["contab@rede.com"],
        ["suporte@relatorios.com"],
    ]
    assert {e.alerta_id for e in entregas} == {Alerta.objects.get().pk}


def test_verificador_so_olha_o_agendamento_quando_um_prazo_vence(tenant) -> None:
    agendamento = criar(tenant, cron="0 3 * * *", periodo="ontem")
    primeiro = agendamento.proximo_disparo
    assert agendamento.proxima_verificacao == primeiro + timedelta(hours=3)
    alertas.verificar(agora=primeiro + timedelta(hours=2))
    antes = Agendamento.objects.get(pk=agendamento.pk)
    assert antes.verificado_ate == agendamento.verificado_ate
    alertas.verificar(agora=primeiro + timedelta(hours=3, minutes=1))
    depois = Agendamento.objects.get(pk=agendamento.pk)
    assert depois.proxima_verificacao == primeiro + timedelta(days=1, hours=3)
    assert Ocorrencia.objects.filter(agendamento=agendamento).count() == 1


def test_um_agendamento_quebrado_nao_silencia_os_outros(tenant, outro_tenant) -> None:
    quebrado = criar(tenant)
    bom = criar(outro_tenant)
    # A row broken behind the service's back (a bad manual UPDATE).
    Agendamento.objects.filter(pk=quebrado.pk).update(cron="isto não é cron")
    resultado = alertas.verificar(agora=bom.proximo_disparo + timedelta(hours=4))
    assert resultado.falhas == 1
    assert resultado.abertos == 1
    assert Alerta.objects.get().ocorrencia.agendamento_id == bom.pk
