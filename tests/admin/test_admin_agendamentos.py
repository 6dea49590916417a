"""The support admin for schedules, occurrences and alerts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from relatorios.agendamentos import agenda, alertas, disparo
from relatorios.agendamentos.entrada import PREVISUALIZAR as PREVIA
from relatorios.models import (
    Agendamento,
    Alerta,
    EstadoDoJob,
    EstadoOcorrencia,
    Ocorrencia,
    RelatorioJob,
    Tenant,
    Usuario,
    permissoes,
)
from tests import fusos, helpers

pytestmark = pytest.mark.django_db

AGENDAMENTOS = "/admin/relatorios/agendamento/"
OCORRENCIAS = "/admin/relatorios/ocorrencia/"
ALERTAS = "/admin/relatorios/alerta/"
NOVO = {
    "nome": "Fechamento",
    "tipo": "vendas",
    "periodo": "mes_anterior",
    "frequencia": "cron",
    "cron": "0 3 1 * *",
    "prazo_minutos": "180",
    "agrupar": "mes",
    "lojas": "L001, L002",
    "destinatarios": "contab@rede.com,dono@rede.com",
    "recuperacao": "ultima",
}


@pytest.fixture
def grupo_suporte(db: None) -> Group:
    return permissoes.criar_grupo_suporte()


@pytest.fixture
def usuario_suporte(grupo_suporte: Group) -> Usuario:
    usuario = helpers.criar_usuario(None, is_staff=True)[0]
    usuario.groups.add(grupo_suporte)
    return usuario


@pytest.fixture
def cliente(usuario_suporte: Usuario) -> Client:
    cliente = Client()
    cliente.force_login(usuario_suporte)
    return cliente


agendar = helpers.criar_agendamento


def alerta_aberto(tenant: Tenant, **campos: Any) -> Alerta:
    agendamento = agendar(tenant, **campos)
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=4))
    return Alerta.objects.get(ocorrencia__agendamento=agendamento)


def ids(resposta: Any) -> set[int]:
    assert resposta.status_code == 200
    return {objeto.pk for objeto in resposta.context["cl"].result_list}


# --- The Suporte group ------------------------------------------------------------


def test_grupo_suporte_tem_exatamente_as_permissoes_de_agendamento(
    grupo_suporte: Group,
) -> None:
    codigos = set(grupo_suporte.permissions.values_list("codename", flat=True))
    novas = {
        "view_agendamento",
        "add_agendamento",
        "change_agendamento",
        "view_ocorrencia",
        "view_alerta",
        "fechar_alerta",
    }
    outras = {
        "view_relatoriojob",
        "operar_relatoriojob",
        "view_tenant",
        "view_cluster",
        "view_webhook",
        "view_entrega",
        "reenviar_entrega",
        "definir_dominios_email",
        "ver_painel",
    }
    assert codigos - outras == novas
    assert set(permissoes.PERMISSOES_DO_SUPORTE) == {("relatorios", c) for c in codigos}


def test_migracao_deu_ao_grupo_as_permissoes_de_agendamento() -> None:
    grupo = Group.objects.get(name="Suporte")
    assert set(
        grupo.permissions.values_list("content_type__app_label", "codename")
    ) == set(permissoes.PERMISSOES_DO_SUPORTE)


def test_gerente_de_tenant_nao_entra_no_admin_de_agendamentos(tenant: Tenant) -> None:
    gerente = helpers.criar_usuario(tenant)[0]
    Usuario.objects.filter(pk=gerente.pk).update(is_staff=True, is_superuser=True)
    cliente = Client()
    cliente.force_login(gerente)
    agendamento = agendar(tenant)
    for caminho in (AGENDAMENTOS, f"{AGENDAMENTOS}add/", OCORRENCIAS, ALERTAS):
        assert cliente.get(caminho).status_code == 302, caminho
    resposta = cliente.post(f"{AGENDAMENTOS}{agendamento.pk}/acoes/pausar/")
    assert resposta.status_code == 302
    agendamento.refresh_from_db()
    assert agendamento.ativo


# --- Schedules ------------------------------------------------------------------


def test_suporte_cria_um_agendamento_pelo_servico(
    cliente: Client, tenant: Tenant, usuario_suporte: Usuario
) -> None:
    helpers.criar_lojas(tenant, "L001", "L002")
    formulario = cliente.get(f"{AGENDAMENTOS}add/").content.decode()
    assert 'name="prazo_minutos"' in formulario
    assert "exclua-o e crie outro" in formulario

    resposta = cliente.post(f"{AGENDAMENTOS}add/", NOVO | {"tenant": tenant.pk})
    assert resposta.status_code == 302
    agendamento = Agendamento.objects.get()
    assert agendamento.tenant_id == tenant.pk
    assert agendamento.criado_por_id == usuario_suporte.pk
    assert agendamento.prazo == timedelta(minutes=180)
    assert agendamento.lojas == ["L001", "L002"]
    assert agendamento.destinatarios == ["contab@rede.com", "dono@rede.com"]
    assert agendamento.proximo_disparo is not None  # set only by the service
    entrada = LogEntry.objects.get(object_id=str(agendamento.pk))
    assert entrada.action_flag == ADDITION


@pytest.mark.parametrize(
    ("campo", "valor", "mensagem"),
    [
        ("cron", "0 3 * *", "cinco campos"),
        ("cron", "0 3 31 2 *", "nunca dispara"),
        ("prazo_minutos", "0", "positivo"),
        ("lojas", "L999", "lojas desconhecidas: L999"),
        ("destinatarios", "x@", "e-mail inválido"),
        ("cron", "*/5 * * * *", "o intervalo mínimo é 15 minutos"),
    ],
)
def test_erro_do_servico_aparece_no_campo_e_nada_e_criado(
    cliente: Client, tenant: Tenant, campo: str, valor: str, mensagem: str
) -> None:
    helpers.criar_lojas(tenant, "L001", "L002")
    resposta = cliente.post(
        f"{AGENDAMENTOS}add/", NOVO | {"tenant": tenant.pk, campo: valor}
    )
    assert resposta.status_code == 200
    erros = resposta.context["adminform"].form.errors
    assert mensagem in str(erros[campo])
    assert not Agendamento.objects.exists()
    assert not LogEntry.objects.exists()


def test_suporte_tambem_respeita_o_limite_de_agendamentos_do_tenant(
    cliente: Client, tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT = 1
    helpers.criar_lojas(tenant, "L001", "L002")
    agendar(tenant)
    resposta = cliente.post(f"{AGENDAMENTOS}add/", NOVO | {"tenant": tenant.pk})
    assert resposta.status_code == 200
    erros = resposta.context["adminform"].form.non_field_errors()
    assert "o limite de 1 agendamentos por empresa" in str(erros)
    assert Agendamento.objects.count() == 1


def test_lista_de_agendamentos_com_fuso_e_ultima_ocorrencia(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    manaus = helpers.criar_tenant("Rede Manaus", fuso="America/Manaus")
    agendamento = agendar(manaus, nome="Mensal Manaus")
    disparo.disparar(agora=agendamento.proximo_disparo)
    pausado = agendar(tenant, nome="Pausado")
    agenda.pausar(agendamento_id=pausado.pk)
    agendar(outro_tenant, tipo="estoque", nome="Estoque")

    cliente.get(AGENDAMENTOS)  # warm the per-process caches
    with CaptureQueriesContext(connection) as poucos:
        cliente.get(AGENDAMENTOS)
    for n in range(5):
        agendar(tenant, cron=f"{n} 6 * * *")
    with CaptureQueriesContext(connection) as consultas:
        resposta = cliente.get(AGENDAMENTOS)
    html = resposta.content.decode()
    # 03:00 on Manaus's wall clock (UTC-4), not UTC's 07:00.
    assert " 03:00" in html
    assert "disparada" in html
    assert "job criado ou reaproveitado" not in html
    assert "pausado" in html
    # No query per row: the last occurrence is a subquery of the page's query.
    assert len(consultas) == len(poucos), "\n".join(q["sql"] for q in consultas)
    assert ids(cliente.get(f"{AGENDAMENTOS}?ativo__exact=0")) == {pausado.pk}
    assert ids(cliente.get(f"{AGENDAMENTOS}?tipo=estoque")) == {
        Agendamento.objects.get(nome="Estoque").pk
    }
    assert ids(cliente.get(f"{AGENDAMENTOS}?q=manaus")) == {agendamento.pk}


def test_suporte_agenda_pelo_seletor_no_fuso_do_tenant(
    cliente: Client, usuario_suporte: Usuario
) -> None:
    lisboa = helpers.criar_tenant("Rede Lisboa", fuso="Europe/Lisbon")
    helpers.criar_lojas(lisboa, "L001", "L002")
    seletor = {
        "frequencia": "semanal",
        "dias_da_semana": ["5", "1"],
        "horario": "07:15",
    }
    novo = {k: v for k, v in NOVO.items() if k != "cron"} | seletor

    resposta = cliente.post(f"{AGENDAMENTOS}add/", novo | {"tenant": lisboa.pk})

    assert resposta.status_code == 302
    agendamento = Agendamento.objects.get()
    assert agendamento.cron == "15 7 * * 1,5"
    frase = "às segundas e sextas, às 07:15 (Europe/Lisbon)"
    assert frase in cliente.get(AGENDAMENTOS).content.decode()
    pagina = cliente.get(f"{AGENDAMENTOS}{agendamento.pk}/change/").content.decode()
    assert agendamento.descricao in pagina


def test_previsualizar_no_admin_mostra_os_disparos_e_nao_cria(
    cliente: Client, tenant: Tenant
) -> None:
    nova_york = helpers.criar_tenant("Rede NY", fuso=fusos.NOVA_YORK)
    helpers.criar_lojas(nova_york, "L001", "L002")
    travessia = fusos.travessia(timezone.now())
    pedido = NOVO | {"tenant": nova_york.pk, "cron": travessia.cron}

    resposta = cliente.post(f"{AGENDAMENTOS}add/", pedido | {PREVIA: "1"})
    sem_tenant = cliente.post(f"{AGENDAMENTOS}add/", NOVO | {PREVIA: "1"})
    fragmento = cliente.post(f"{AGENDAMENTOS}previa/", pedido)

    assert resposta.status_code == 200
    assert not Agendamento.objects.exists()
    assert not LogEntry.objects.exists()
    html = resposta.content.decode()
    assert "errornote" not in html
    previa = resposta.context["adminform"].form.previa
    assert previa.disparos == list(
        zip(
            travessia.locais,
            fusos.prazos(travessia.disparos, 180, fusos.NOVA_YORK),
            strict=True,
        )
    )
    assert previa.descricao in html
    assert f"({fusos.NOVA_YORK}); próximo: {travessia.locais[0]}" in html
    assert "tenant" in sem_tenant.context["adminform"].form.errors
    assert fragmento.status_code == 200
    assert previa.descricao in fragmento.content.decode()


def test_previa_do_admin_so_para_quem_pode_criar(tenant: Tenant) -> None:
    so_staff = helpers.criar_usuario(None, is_staff=True)[0]
    cliente = Client()
    cliente.force_login(so_staff)

    resposta = cliente.post(f"{AGENDAMENTOS}previa/", NOVO | {"tenant": tenant.pk})

    assert resposta.status_code == 403


def test_pagina_do_agendamento_e_so_leitura_com_botoes(
    cliente: Client, tenant: Tenant
) -> None:
    agendamento = agendar(tenant, nome="Mensal")
    disparo.disparar(agora=agendamento.proximo_disparo)
    job_id = Ocorrencia.objects.get().job_id
    pagina = f"{AGENDAMENTOS}{agendamento.pk}/change/"
    html = cliente.get(pagina).content.decode()
    assert 'name="cron"' not in html
    assert 'name="_save"' not in html
    assert 'value="Pausar"' in html
    assert 'value="Executar agora"' in html
    assert f'href="/admin/relatorios/relatoriojob/{job_id}/change/"' in html
    assert cliente.post(pagina, {"cron": "* * * * *"}).status_code == 403
    assert cliente.get(f"{AGENDAMENTOS}{agendamento.pk}/delete/").status_code == 403
    agendamento.refresh_from_db()
    assert agendamento.cron == "0 3 1 * *"


def test_pausar_e_retomar_pelo_admin_chamam_o_servico_e_registram(
    cliente: Client, tenant: Tenant, usuario_suporte: Usuario
) -> None:
    agendamento = agendar(tenant)
    acoes = f"{AGENDAMENTOS}{agendamento.pk}/acoes"
    resposta = cliente.post(f"{acoes}/pausar/")
    assert resposta["Location"] == f"{AGENDAMENTOS}{agendamento.pk}/change/"
    agendamento.refresh_from_db()
    assert not agendamento.ativo
    assert agendamento.pausado_em is not None
    assert agendamento.proximo_disparo is None

    segunda = cliente.post(f"{acoes}/pausar/")
    assert (
        "pausar sem mudança: já estava pausado ou excluído (1)."
        in helpers.mensagens(segunda)
    )
    cliente.post(f"{acoes}/retomar/")
    agendamento.refresh_from_db()
    assert agendamento.ativo
    registros = list(
        LogEntry.objects.filter(object_id=str(agendamento.pk))
        .order_by("pk")
        .values_list("action_flag", "change_message", "user_id")
    )
    assert registros == [
        (CHANGE, "pausado pelo suporte", usuario_suporte.pk),
        (
            CHANGE,
            "pausar sem efeito: já estava pausado ou excluído",
            usuario_suporte.pk,
        ),
        (CHANGE, "retomado pelo suporte", usuario_suporte.pk),
    ]
    assert cliente.get(f"{acoes}/pausar/").status_code == 405
    assert cliente.post(f"{acoes}/apagar/").status_code == 404


def test_executar_agora_cria_a_ocorrencia_e_diz_qual_job(
    cliente: Client, tenant: Tenant
) -> None:
    agendamento = agendar(tenant)
    resposta = cliente.post(f"{AGENDAMENTOS}{agendamento.pk}/acoes/executar_agora/")
    ocorrencia = Ocorrencia.objects.get(agendamento=agendamento)
    assert ocorrencia.estado == EstadoOcorrencia.DISPARADA
    assert ocorrencia.motivo == "executar agora"
    job = RelatorioJob.objects.get(pk=ocorrencia.job_id)
    assert job.status == EstadoDoJob.PENDENTE
    texto = helpers.mensagens(resposta)[0]
    assert f"job {job.pk}" in texto
    assert f"/admin/relatorios/relatoriojob/{job.pk}/change/" in texto
    entrada = LogEntry.objects.get(object_id=str(agendamento.pk))
    assert entrada.get_change_message() == (
        f"executado agora pelo suporte: ocorrência {ocorrencia.pk}, job {job.pk}"
    )


def test_excluir_em_massa_e_soft_e_o_historico_fica(
    cliente: Client, tenant: Tenant
) -> None:
    agendamento = agendar(tenant)
    resposta = cliente.post(
        AGENDAMENTOS,
        {"action": "excluir", "_selected_action": [agendamento.pk], "index": 0},
    )
    assert helpers.mensagens(resposta) == ["Agendamentos excluídos: 1."]
    agendamento.refresh_from_db()
    assert agendamento.excluido_em is not None
    html = cliente.get(f"{AGENDAMENTOS}{agendamento.pk}/change/").content.decode()
    assert 'value="Executar agora"' not in html
    resposta = cliente.post(f"{AGENDAMENTOS}{agendamento.pk}/acoes/executar_agora/")
    assert not Ocorrencia.objects.exists()
    assert "nada foi executado" in helpers.mensagens(resposta)[0]


def test_equipe_sem_permissao_de_mudar_nao_pausa(
    tenant: Tenant, grupo_suporte: Group
) -> None:
    usuario = helpers.criar_usuario(None, is_staff=True)[0]
    usuario.user_permissions.add(
        *grupo_suporte.permissions.exclude(codename="change_agendamento")
    )
    cliente = Client()
    cliente.force_login(usuario)
    agendamento = agendar(tenant)
    assert cliente.get(f"{AGENDAMENTOS}{agendamento.pk}/change/").status_code == 200
    resposta = cliente.post(f"{AGENDAMENTOS}{agendamento.pk}/acoes/pausar/")
    assert resposta.status_code == 403
    agendamento.refresh_from_db()
    assert agendamento.ativo


# --- Occurrences ------------------------------------------------------------------


def test_ocorrencias_so_leitura_com_filtros_e_reexecutar(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    alerta = alerta_aberto(tenant)
    alheia = alerta_aberto(outro_tenant, cron="0 4 1 * *")
    ocorrencia = alerta.ocorrencia
    assert ocorrencia.job_id is None  # never fired
    assert ids(cliente.get(f"{OCORRENCIAS}?tenant__id__exact={tenant.pk}")) == {
        ocorrencia.pk
    }
    assert ids(cliente.get(f"{OCORRENCIAS}?estado__exact=nao_disparada")) == {
        ocorrencia.pk,
        alheia.ocorrencia_id,
    }
    filtrada = f"{OCORRENCIAS}?agendamento__id__exact={ocorrencia.agendamento_id}"
    assert ids(cliente.get(filtrada)) == {ocorrencia.pk}
    assert cliente.get(f"{OCORRENCIAS}{ocorrencia.pk}/change/").status_code == 200
    assert cliente.get(f"{OCORRENCIAS}add/").status_code == 403

    resposta = cliente.post(
        OCORRENCIAS,
        {
            "action": "reexecutar_ocorrencia",
            "_selected_action": [ocorrencia.pk],
            "index": 0,
        },
    )
    assert helpers.mensagens(resposta) == ["Ocorrências reexecutadas: 1."]
    ocorrencia.refresh_from_db()
    assert ocorrencia.job_id is not None
    assert LogEntry.objects.get(object_id=str(ocorrencia.pk)).get_change_message() == (
        "ocorrência reexecutada pelo suporte"
    )


# --- Alerts ------------------------------------------------------------------


def test_lista_de_alertas_abre_nos_abertos(
    cliente: Client, tenant: Tenant, usuario_suporte: Usuario
) -> None:
    aberto = alerta_aberto(tenant, nome="A")
    fechado = alerta_aberto(tenant, nome="B", cron="0 4 1 * *")
    alertas.fechar(alerta_id=fechado.pk, usuario_id=usuario_suporte.pk, nota="feito")
    assert ids(cliente.get(ALERTAS)) == {aberto.pk}
    assert ids(cliente.get(f"{ALERTAS}?situacao=abertos")) == {aberto.pk}
    assert ids(cliente.get(f"{ALERTAS}?situacao=fechados")) == {fechado.pk}
    assert ids(cliente.get(f"{ALERTAS}?situacao=todos")) == {aberto.pk, fechado.pk}
    html = cliente.get(f"{ALERTAS}?situacao=todos").content.decode()
    assert "a ocorrência não foi disparada" in html
    assert cliente.get(f"{ALERTAS}{aberto.pk}/change/").status_code == 200


def test_fechar_com_nota_pede_a_nota_e_guarda_quem_fechou(
    cliente: Client, tenant: Tenant, usuario_suporte: Usuario
) -> None:
    alerta = alerta_aberto(tenant)
    pergunta = cliente.post(
        ALERTAS,
        {"action": "fechar_com_nota", "_selected_action": [alerta.pk], "index": 0},
    )
    assert pergunta.status_code == 200
    assert 'name="nota"' in pergunta.content.decode()
    alerta.refresh_from_db()
    assert alerta.aberto

    dados = {
        "action": "fechar_com_nota",
        "_selected_action": [alerta.pk],
        "confirmar": "1",
    }
    assert cliente.post(ALERTAS, dados | {"nota": " "}).status_code == 200
    alerta.refresh_from_db()
    assert alerta.aberto

    resposta = cliente.post(ALERTAS, dados | {"nota": "rodado à mão no ERP"})
    assert resposta.status_code == 302
    assert helpers.mensagens(resposta) == ["Alertas fechados: 1."]
    alerta.refresh_from_db()
    assert not alerta.aberto
    assert alerta.nota == "rodado à mão no ERP"
    assert alerta.fechado_por_id == usuario_suporte.pk
    entrada = LogEntry.objects.get(object_id=str(alerta.pk))
    assert entrada.user_id == usuario_suporte.pk
    assert entrada.get_change_message() == (
        "fechado pelo suporte; nota: rodado à mão no ERP"
    )

    # Again: the service says it was already closed; the first note stays.
    cliente.post(ALERTAS, dados | {"nota": "de novo"})
    alerta.refresh_from_db()
    assert alerta.nota == "rodado à mão no ERP"


def test_fechar_alerta_exige_a_permissao(tenant: Tenant, grupo_suporte: Group) -> None:
    usuario = helpers.criar_usuario(None, is_staff=True)[0]
    usuario.user_permissions.add(
        *grupo_suporte.permissions.exclude(codename="fechar_alerta")
    )
    cliente = Client()
    cliente.force_login(usuario)
    alerta = alerta_aberto(tenant)
    acoes = {
        nome
        for nome, _ in cliente.get(ALERTAS)
        .context["action_form"]
        .fields["action"]
        .choices
    }
    assert acoes == {"", "reexecutar_ocorrencia"}
    cliente.post(
        ALERTAS,
        {
            "action": "fechar_com_nota",
            "_selected_action": [alerta.pk],
            "confirmar": "1",
            "nota": "sem permissão",
        },
    )
    alerta.refresh_from_db()
    assert alerta.aberto


def test_reexecutar_pelo_alerta_liga_um_job_a_ocorrencia(
    cliente: Client, tenant: Tenant
) -> None:
    alerta = alerta_aberto(tenant)
    resposta = cliente.post(
        ALERTAS,
        {
            "action": "reexecutar_ocorrencia",
            "_selected_action": [alerta.pk],
            "index": 0,
        },
    )
    assert helpers.mensagens(resposta) == ["Ocorrências reexecutadas: 1."]
    assert Ocorrencia.objects.get().job_id is not None


# --- Landing page -----------------------------------------------------------------


def test_pagina_inicial_conta_alertas_abertos_e_agendamentos_ativos(
    cliente: Client, tenant: Tenant
) -> None:
    alerta_aberto(tenant)
    pausado = agendar(tenant, cron="0 5 1 * *")
    agenda.pausar(agendamento_id=pausado.pk)
    cliente.get("/admin/")  # warm the per-process caches
    with CaptureQueriesContext(connection) as antes:
        cliente.get("/admin/")
    alerta_aberto(tenant, cron="0 4 1 * *")
    with CaptureQueriesContext(connection) as depois:
        resposta = cliente.get("/admin/")
    numeros = resposta.context["indicadores"]
    assert (numeros.alertas_abertos, numeros.agendamentos_ativos) == (2, 2)
    html = resposta.content.decode()
    assert 'data-indicador="alertas_abertos">2<' in html
    assert f'href="{ALERTAS}?situacao=abertos"' in html
    assert len(depois) == len(antes)
