"""The managers' schedule pages: /painel/agendamentos/ and the /painel/ box."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone

from relatorios.agendamentos import alertas, disparo
from relatorios.agendamentos.entrada import PREVISUALIZAR as PREVIA
from relatorios.jobs import suporte
from relatorios.models import Agendamento, Alerta, Ocorrencia, Tenant, Usuario
from tests import fusos, helpers

pytestmark = pytest.mark.django_db

PAGINA = "/painel/agendamentos/"
NOVO = {
    "nome": "Fechamento mensal",
    "tipo": "vendas",
    "periodo": "mes_anterior",
    "frequencia": "cron",
    "cron": "0 3 1 * *",
    "prazo_minutos": "180",
    "agrupar": "mes",
    "lojas": ["L001"],
    "destinatarios": "contab@rede.com, Dono@Rede.com",
    "recuperacao": "ultima",
}
SEM_CRON = {k: v for k, v in NOVO.items() if k not in ("frequencia", "cron")}
SAO_PAULO = "America/Sao_Paulo"


@pytest.fixture
def gerente(tenant: Tenant) -> Usuario:
    helpers.criar_lojas(tenant, "L001", "L002")
    return helpers.criar_usuario(tenant)[0]


@pytest.fixture
def cliente(gerente: Usuario) -> Client:
    cliente = Client()
    cliente.force_login(gerente)
    return cliente


agendar = helpers.criar_agendamento


def linha_do_agendamento(html: str, agendamento: Agendamento) -> str:
    return html.split(f'data-agendamento="{agendamento.pk}"', 1)[1].split("</tr>")[0]


def test_gerente_cria_um_agendamento_do_seu_tenant(
    cliente: Client, tenant: Tenant, gerente: Usuario
) -> None:
    pagina = cliente.get(PAGINA).content.decode()
    assert 'name="cron"' in pagina
    assert "csrfmiddlewaretoken" in pagina
    assert 'value="L001"' in pagina
    assert "mês anterior" in pagina  # the period's human label

    resposta = cliente.post(f"{PAGINA}novo/", NOVO)
    assert resposta.status_code == 302
    assert resposta["Location"] == PAGINA
    agendamento = Agendamento.objects.get()
    assert (agendamento.tenant_id, agendamento.criado_por_id) == (tenant.pk, gerente.pk)
    assert agendamento.prazo == timedelta(minutes=180)
    assert agendamento.lojas == ["L001"]
    assert agendamento.destinatarios == ["contab@rede.com", "dono@rede.com"]

    html = cliente.get(PAGINA).content.decode()
    assert "Fechamento mensal" in html
    assert "3 h" in html
    # The next three firings, at 03:00 of a 1st in the tenant's zone.
    assert html.count(" 03:00") >= 3
    assert "Pausar" in html


@pytest.mark.parametrize(
    ("campo", "valor", "mensagem"),
    [
        ("cron", "61 3 * * *", "expressão cron inválida"),
        ("cron", "0 3 * *", "cinco campos"),
        ("prazo_minutos", "0", "positivo"),
        ("destinatarios", "não é email", "e-mail inválido"),
        ("destinatarios", "a@rede.com, root@[10.0.0.5]", "IP no lugar do domínio"),
        ("destinatarios", "postmaster@localhost", "precisa de um ponto"),
        ("cron", "*/5 * * * *", "o intervalo mínimo é 15 minutos"),
        ("cron", "0 3 * * " + ",".join(["1"] * 100), "200 caracteres"),
        ("nome", "Fechamento\nmensal", "quebras de linha"),
        ("pular", "sempre", "Faça uma escolha válida"),
    ],
)
def test_erro_aparece_no_seu_campo_e_nada_e_criado(
    cliente: Client, campo: str, valor: str, mensagem: str
) -> None:
    resposta = cliente.post(f"{PAGINA}novo/", NOVO | {campo: valor})
    assert resposta.status_code == 400
    assert mensagem in str(resposta.context["form"].errors[campo])
    html = resposta.content.decode()
    bloco = html.split(f'id="campo-{campo}"', 1)[1].split("</div>", 1)[0]
    assert mensagem in bloco
    assert not Agendamento.objects.exists()


def test_gerente_escolhe_nao_enviar_relatorio_vazio(cliente: Client) -> None:
    resposta = cliente.post(f"{PAGINA}novo/", NOVO | {"pular": "vazio"})
    assert resposta.status_code == 302
    assert Agendamento.objects.get().pular == "vazio"


def test_agendamento_alem_do_limite_do_tenant_e_409_com_o_motivo(
    cliente: Client, tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT = 1
    agendar(tenant)
    resposta = cliente.post(f"{PAGINA}novo/", NOVO)
    assert resposta.status_code == 409
    assert "o limite de 1 agendamentos por empresa" in resposta.content.decode()
    assert Agendamento.objects.count() == 1


def test_o_campo_cron_diz_seu_tamanho_maximo(cliente: Client) -> None:
    campo = re.search(
        r'<input[^>]*name="cron"[^>]*>', cliente.get(PAGINA).content.decode()
    )
    assert campo is not None
    assert 'maxlength="200"' in campo.group(0)


def test_loja_de_outro_tenant_nao_e_aceita(
    cliente: Client, outro_tenant: Tenant
) -> None:
    helpers.criar_lojas(outro_tenant, "OUTRA")
    resposta = cliente.post(f"{PAGINA}novo/", NOVO | {"lojas": ["OUTRA"]})
    assert resposta.status_code == 400
    assert "lojas" in resposta.context["form"].errors
    assert not Agendamento.objects.exists()


def test_gerente_pausa_retoma_e_exclui(cliente: Client, tenant: Tenant) -> None:
    agendamento = agendar(tenant, nome="Diário")
    base = f"{PAGINA}{agendamento.pk}"
    assert cliente.post(f"{base}/pausar/")["Location"] == (
        f"{PAGINA}?pausado={agendamento.pk}"
    )
    agendamento.refresh_from_db()
    assert (agendamento.ativo, agendamento.proximo_disparo) == (False, None)
    assert "Retomar" in cliente.get(PAGINA).content.decode()

    cliente.post(f"{base}/retomar/")
    agendamento.refresh_from_db()
    assert agendamento.ativo

    cliente.post(f"{base}/excluir/")
    agendamento.refresh_from_db()
    assert agendamento.excluido_em is not None
    assert not agendamento.ativo
    assert f'data-agendamento="{agendamento.pk}"' not in (
        cliente.get(PAGINA).content.decode()
    )
    # Gone for the page: acting on it again is a 404.
    assert cliente.post(f"{base}/retomar/").status_code == 404


def test_pausar_diz_qual_e_oferece_desfazer(cliente: Client, tenant: Tenant) -> None:
    agendamento = agendar(tenant, nome="Vendas do dia")
    pagina = cliente.post(
        f"{PAGINA}{agendamento.pk}/pausar/", follow=True
    ).content.decode()
    desfazer = f"{PAGINA}{agendamento.pk}/retomar/"

    assert "Agendamento «Vendas do dia» pausado." in pagina
    assert f'action="{desfazer}"' in pagina
    assert "Desfazer (retomar «Vendas do dia»)" in pagina
    cliente.post(desfazer)
    agendamento.refresh_from_db()
    assert agendamento.ativo
    # Once resumed, the same address offers nothing to undo.
    depois = cliente.get(f"{PAGINA}?pausado={agendamento.pk}").content.decode()
    assert "Desfazer" not in depois
    assert "Desfazer" not in cliente.get(f"{PAGINA}?pausado=x").content.decode()


def test_pausar_duas_vezes_avisa_que_nada_mudou(
    cliente: Client, tenant: Tenant
) -> None:
    agendamento = agendar(tenant)
    cliente.post(f"{PAGINA}{agendamento.pk}/pausar/")
    resposta = cliente.post(f"{PAGINA}{agendamento.pk}/pausar/", follow=True)
    assert "já estava pausado" in resposta.content.decode()


def test_agendamento_de_outro_tenant_e_404(
    cliente: Client, outro_tenant: Tenant
) -> None:
    alheio = agendar(outro_tenant, nome="Segredo da Rede B")
    for acao in ("pausar", "retomar", "excluir"):
        assert cliente.post(f"{PAGINA}{alheio.pk}/{acao}/").status_code == 404
    alheio.refresh_from_db()
    assert alheio.ativo
    assert alheio.excluido_em is None
    assert "Segredo da Rede B" not in cliente.get(PAGINA).content.decode()
    assert cliente.post(f"{PAGINA}{2**63}/pausar/").status_code == 404


def test_acoes_so_por_post(cliente: Client, tenant: Tenant) -> None:
    agendamento = agendar(tenant)
    assert cliente.get(f"{PAGINA}{agendamento.pk}/pausar/").status_code == 405
    assert cliente.post(f"{PAGINA}{agendamento.pk}/apagar/").status_code == 404
    agendamento.refresh_from_db()
    assert agendamento.ativo


def test_alertas_abertos_primeiro_com_link_para_o_job(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    agendamento = agendar(tenant, nome="Mensal")
    planejado = agendamento.proximo_disparo
    disparo.disparar(agora=planejado)
    alertas.verificar(agora=planejado + timedelta(hours=4))
    alerta = Alerta.objects.select_related("ocorrencia").get()
    alheio = agendar(outro_tenant, nome="Alheio")
    alertas.verificar(agora=alheio.proximo_disparo + timedelta(hours=4))

    html = cliente.get(PAGINA).content.decode()
    assert 'class="alerta-aberto"' in html
    assert "o prazo venceu com o relatório ainda na fila" in html
    assert f'href="/painel/jobs/{alerta.ocorrencia.job_id}/"' in html
    assert "Alheio" not in html


def test_painel_mostra_quantos_alertas_estao_abertos(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    html = cliente.get("/painel/").content.decode()
    assert 'data-alertas-abertos="0"' in html
    assert 'href="/painel/agendamentos/"' in html
    agendamento = agendar(tenant)
    agendar(tenant, cron="0 4 1 * *")
    agendar(outro_tenant)
    # One month of silence: each schedule's occurrence misses its deadline.
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=5))
    assert Alerta.objects.filter(tenant=tenant).count() == 2
    assert Alerta.objects.count() == 3

    html = cliente.get("/painel/").content.decode()
    assert 'data-alertas-abertos="2"' in html
    assert "com-alertas" in html
    assert "2 alertas abertos" in html


def test_suporte_vai_ao_admin_e_nao_age_nas_paginas_de_agendamento(
    db: None, tenant: Tenant
) -> None:
    agendamento = agendar(tenant)
    suporte = helpers.criar_usuario(None, is_staff=True)[0]
    cliente = Client()
    cliente.force_login(suporte)
    # Reading: support is sent to its own place; acting: refused.
    assert cliente.get(PAGINA)["Location"] == "/admin/"
    assert cliente.post(f"{PAGINA}novo/", NOVO).status_code == 403
    assert cliente.post(f"{PAGINA}previa/", NOVO).status_code == 403
    assert cliente.post(f"{PAGINA}{agendamento.pk}/pausar/").status_code == 403
    agendamento.refresh_from_db()
    assert agendamento.ativo


def test_pagina_exige_login(client: Client) -> None:
    resposta = client.get(PAGINA)
    assert resposta.status_code == 302
    assert resposta["Location"].startswith("/entrar/?next=")


# --- The frequency picker and the preview -------------------------------------------


def test_gerente_agenda_o_ultimo_dia_do_mes_pelo_seletor(
    cliente: Client, tenant: Tenant
) -> None:
    hora = fusos.hora_longe_de(timezone.now(), SAO_PAULO)
    seletor = {"frequencia": "mensal", "dia_do_mes": "L", "horario": f"{hora:%H:%M}"}
    resposta = cliente.post(f"{PAGINA}novo/", SEM_CRON | seletor)
    esperados = fusos.ultimos_dias_do_mes(hora, SAO_PAULO, timezone.now())

    assert resposta.status_code == 302
    agendamento = Agendamento.objects.get()
    assert agendamento.cron == f"30 {hora.hour} L * *"
    assert agendamento.proximo_disparo == esperados[0]
    linha = linha_do_agendamento(cliente.get(PAGINA).content.decode(), agendamento)
    assert (
        f"no último dia de cada mês, às {hora:%H:%M} (horário de Brasília); "
        f"próximo: {fusos.local(esperados[0], SAO_PAULO)}"
    ) in linha
    for esperado in esperados:
        assert fusos.local(esperado, SAO_PAULO) in linha


@pytest.mark.parametrize(
    ("seletor", "campo", "mensagem"),
    [
        ({"frequencia": "semanal", "horario": "06:30"}, "dias_da_semana", "pelo menos"),
        (
            {"frequencia": "mensal", "dia_do_mes": "0", "horario": "06:30"},
            "dia_do_mes",
            "válida",
        ),
        ({"frequencia": "diaria", "horario": ""}, "horario", "informe o horário"),
        ({"frequencia": "cron", "cron": ""}, "cron", "informe a expressão cron"),
        ({"frequencia": "todo_dia", "horario": "06:30"}, "frequencia", "válida"),
    ],
)
def test_escolha_invalida_do_seletor_e_400_no_seu_campo(
    cliente: Client, seletor: dict[str, str], campo: str, mensagem: str
) -> None:
    resposta = cliente.post(f"{PAGINA}novo/", SEM_CRON | seletor)

    assert resposta.status_code == 400
    assert list(resposta.context["form"].errors) == [campo]
    # From the field's box to the next field's (its widget has boxes of its own).
    bloco = resposta.content.decode().split(f'id="campo-{campo}"', 1)[1]
    assert mensagem in bloco.split('id="campo-', 1)[0]
    assert not Agendamento.objects.exists()


def test_previsualizar_mostra_disparos_e_prazos_e_nao_cria_nada(
    cliente: Client, tenant: Tenant
) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(fuso_horario=fusos.NOVA_YORK)
    travessia = fusos.travessia(timezone.now())
    pedido = NOVO | {"cron": travessia.cron, "prazo_minutos": "180", PREVIA: "1"}

    resposta = cliente.post(f"{PAGINA}novo/", pedido)

    assert resposta.status_code == 200
    assert not Agendamento.objects.exists()
    previa = resposta.context["form"].previa
    assert previa.descricao.endswith(
        f"({fusos.NOVA_YORK}); próximo: {travessia.locais[0]}"
    )
    assert previa.disparos == list(
        zip(
            travessia.locais,
            fusos.prazos(travessia.disparos, 180, fusos.NOVA_YORK),
            strict=True,
        )
    )
    html = resposta.content.decode()
    assert previa.descricao in html
    assert f'value="{travessia.cron}"' in html  # the form keeps what was typed


def test_previa_do_script_e_um_fragmento_com_os_erros_do_seletor(
    cliente: Client,
) -> None:
    valida = cliente.post(
        f"{PAGINA}previa/", SEM_CRON | {"frequencia": "diaria", "horario": "07:00"}
    )
    invalida = cliente.post(
        f"{PAGINA}previa/", SEM_CRON | {"frequencia": "semanal", "horario": "07:00"}
    )
    intervalo = cliente.post(f"{PAGINA}previa/", NOVO | {"cron": "*/5 * * * *"})

    assert valida.status_code == 200
    assert "<html" not in valida.content.decode()
    assert valida.content.decode().count('data-campo="previa-disparo"') == 3
    assert "todos os dias às 07:00 (horário de Brasília)" in valida.content.decode()
    assert "escolha pelo menos um dia da semana" in invalida.content.decode()
    assert "o intervalo mínimo é 15 minutos" in intervalo.content.decode()
    assert cliente.get(f"{PAGINA}previa/").status_code == 405
    assert not Agendamento.objects.exists()


def test_cada_execucao_diz_como_terminou(cliente: Client, tenant: Tenant) -> None:
    agendamento = agendar(tenant, nome="Vendas do dia")
    entregue = disparo.executar_agora(agendamento_id=agendamento.pk)
    falha = disparo.executar_agora(agendamento_id=agendamento.pk)
    # 18:11 UTC is 15:11 in Brasília, the tenant's clock.
    Ocorrencia.objects.filter(pk=entregue.pk).update(
        entregue_em=datetime(2026, 12, 7, 18, 11, tzinfo=UTC), motivo=""
    )
    suporte.marcar_como_falhou(job_id=falha.job_id, motivo="ERP fora do ar")

    linha = linha_do_agendamento(cliente.get(PAGINA).content.decode(), agendamento)
    desfechos = re.findall(r"data-desfecho>([^<]+)<", linha)
    assert sorted(desfechos) == ["Entregue às 15:11", "Falhou (manual)"]


def test_pedido_por_nomeia_o_agendamento(cliente: Client, tenant: Tenant) -> None:
    agendamento = agendar(tenant, nome="Fechamento da contabilidade")
    disparo.executar_agora(agendamento_id=agendamento.pk)

    html = cliente.get("/painel/").content.decode()

    assert "agendamento «Fechamento da contabilidade»" in html


def _semana_antes(dia: date) -> str:
    segunda = dia - timedelta(days=dia.weekday() + 7)
    return f"{segunda:%d/%m/%Y} a {segunda + timedelta(days=6):%d/%m/%Y}"


@pytest.mark.parametrize(
    ("periodo", "esperado"),
    [
        ("mes_anterior", lambda dia: f"dezembro de {dia.year - 1}"),
        ("ontem", lambda dia: f"31/12/{dia.year - 1}"),
        ("ano_anterior", lambda dia: str(dia.year - 1)),
        ("semana_anterior", _semana_antes),
    ],
)
def test_previa_diz_o_periodo_de_cada_disparo(
    cliente: Client, periodo: str, esperado: Any
) -> None:
    # Every 1 January at 03:00: each firing reports on the year that ended.
    primeiro = date(timezone.localdate(timezone=ZoneInfo(SAO_PAULO)).year + 1, 1, 1)
    html = cliente.post(
        f"{PAGINA}previa/", NOVO | {"periodo": periodo, "cron": "0 3 1 1 *"}
    ).content.decode()

    periodos = re.findall(r'data-campo="previa-periodo">([^<]+)<', html)
    assert periodos == [
        esperado(primeiro.replace(year=primeiro.year + n)) for n in range(3)
    ]
