"""A manager schedules a report in a real headless Chromium, against the real
web server: the frequency picker (no cron typed), the preview of the next
firings and deadlines, with and without JavaScript, and a schedule whose
firings cross a DST change of the tenant's zone."""

from __future__ import annotations

import re
from datetime import time
from pathlib import Path

import pytest
from django.conf import global_settings
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect

from relatorios.models import Agendamento, Tenant, Usuario
from tests import fusos, helpers
from tests.paginas.test_navegador import (
    ESPERA_MS,
    SENHA,
    entrar,
    gerente,
    navegador,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

SAO_PAULO = "America/Sao_Paulo"
PAGINA = "/painel/agendamentos/"
PRAZO = 180
# The preview's firing and deadline cells (the third says the period).
CELULAS_DE_HORARIO = "[data-campo='previa-disparo'] td:not([data-campo])"


def abrir(navegador: Browser, servidor: str, tenant: Tenant, **contexto: bool) -> Page:  # noqa: F811
    helpers.criar_lojas(tenant, "L001", "L002")
    gerente(tenant, "ana")
    pagina = navegador.new_context(locale="pt-BR", **contexto).new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, servidor, "ana")
    pagina.goto(f"{servidor}{PAGINA}")
    return pagina


def preencher_o_resto(pagina: Page) -> None:
    pagina.fill("#id_nome", "Fechamento mensal")
    pagina.select_option("#id_tipo", "vendas")
    pagina.select_option("#id_periodo", "mes_anterior")
    pagina.fill("#id_destinatarios", "contab@rede.com")


def celulas_da_previa(disparos: list[str], prazos: list[str]) -> list[str]:
    return [texto for par in zip(disparos, prazos, strict=True) for texto in par]


def test_gerente_agenda_o_fim_do_mes_pelo_seletor_sem_digitar_cron(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
    pasta_saida: Path,
) -> None:
    pagina = abrir(navegador, servidor, tenant)
    hora = fusos.hora_longe_de(timezone.now(), SAO_PAULO)
    esperados = fusos.ultimos_dias_do_mes(hora, SAO_PAULO, timezone.now())
    locais = [fusos.local(d, SAO_PAULO) for d in esperados]
    prazos = fusos.prazos(esperados, PRAZO, SAO_PAULO)
    frase = (
        f"no último dia de cada mês, às {hora:%H:%M} (horário de Brasília); "
        f"próximo: {locais[0]}"
    )
    cron = pagina.locator("#id_cron")
    dias_da_semana = pagina.locator("#campo-dias_da_semana")

    preencher_o_resto(pagina)
    # Only the fields of the chosen frequency are in view (CSS, no script).
    pagina.check("input[name=frequencia][value=semanal]")
    expect(dias_da_semana).to_be_visible()
    expect(cron).to_be_hidden()
    pagina.check("input[name=frequencia][value=mensal]")
    expect(dias_da_semana).to_be_hidden()
    expect(cron).to_be_hidden()
    pagina.select_option("#id_dia_do_mes", "L")
    pagina.fill("#id_horario", f"{hora:%H:%M}")

    # The preview follows the form (agendamento.js asks the server).
    expect(pagina.locator("[data-campo='previa-descricao']")).to_have_text(frase)
    expect(pagina.locator(CELULAS_DE_HORARIO)).to_have_text(
        celulas_da_previa(locais, prazos)
    )
    assert cron.input_value() == ""
    pagina.locator("#novo-agendamento").screenshot(
        path=str(pasta_saida / "seletor-mensal.png")
    )
    pagina.click("button:has-text('Agendar')")

    expect(pagina).to_have_url(re.compile(rf"{PAGINA}$"))
    agendamento = Agendamento.objects.get()
    assert agendamento.cron == f"30 {hora.hour} L * *"
    assert agendamento.prazo.total_seconds() == PRAZO * 60
    linha = pagina.locator(f"tr[data-agendamento='{agendamento.pk}']")
    # The short sentence in the cell, the full one (zone, next) on hover.
    expect(linha.locator("[data-campo='descricao']")).to_have_text(
        f"no último dia de cada mês, às {hora:%H:%M}"
    )
    expect(linha.locator("[data-campo='descricao']")).to_have_attribute(
        "title", f"{frase} · cron 30 {hora.hour} L * *"
    )
    for local in locais:
        expect(linha).to_contain_text(local)


def test_sem_javascript_previsualizar_e_um_envio_que_nao_salva(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
) -> None:
    pagina = abrir(navegador, servidor, tenant, java_script_enabled=False)
    hora = time(7, 45)
    preencher_o_resto(pagina)
    pagina.check("input[name=frequencia][value=diaria]")
    pagina.fill("#id_horario", f"{hora:%H:%M}")
    expect(pagina.locator("#id_dia_do_mes")).to_be_hidden()

    pagina.click("button:has-text('Pré-visualizar')")

    expect(pagina.locator("[data-campo='previa-descricao']")).to_contain_text(
        "todos os dias às 07:45 (horário de Brasília); próximo: "
    )
    expect(pagina.locator("[data-campo='previa-disparo']")).to_have_count(3)
    assert not Agendamento.objects.exists()
    # The form came back as it was filled in; saving is the other button.
    expect(pagina.locator("#id_horario")).to_have_value("07:45")
    pagina.click("button:has-text('Agendar')")
    expect(pagina).to_have_url(re.compile(rf"{PAGINA}$"))
    assert Agendamento.objects.get().cron == "45 7 * * *"


def test_frase_e_proximos_disparos_atravessam_a_mudanca_de_horario(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(fuso_horario=fusos.NOVA_YORK)
    travessia = fusos.travessia(timezone.now())
    prazos = fusos.prazos(travessia.disparos, PRAZO, fusos.NOVA_YORK)
    pagina = abrir(navegador, servidor, tenant)
    preencher_o_resto(pagina)
    pagina.check("input[name=frequencia][value=cron]")
    expect(pagina.locator("#id_horario")).to_be_hidden()
    pagina.fill("#id_cron", travessia.cron)
    pagina.click("button:has-text('Pré-visualizar')")

    # Wall-clock times on New York's clock on both sides of the change, and
    # each deadline the firing's instant plus 180 minutes.
    descricao = pagina.locator("[data-campo='previa-descricao']")
    expect(descricao).to_contain_text(
        f"({fusos.NOVA_YORK}); próximo: {travessia.locais[0]}"
    )
    expect(pagina.locator(CELULAS_DE_HORARIO)).to_have_text(
        celulas_da_previa(travessia.locais, prazos)
    )
    pagina.click("button:has-text('Agendar')")

    expect(pagina).to_have_url(re.compile(rf"{PAGINA}$"))
    agendamento = Agendamento.objects.get()
    assert agendamento.proximo_disparo == travessia.disparos[0]
    linha = pagina.locator(f"tr[data-agendamento='{agendamento.pk}']")
    expect(linha.locator("[data-campo='descricao']")).to_have_attribute(
        "title",
        re.compile(re.escape(f"({fusos.NOVA_YORK}); próximo: {travessia.locais[0]}")),
    )
    for local in travessia.locais:
        expect(linha).to_contain_text(local)


def test_suporte_ve_a_previa_no_fuso_do_tenant_escolhido(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
) -> None:
    lisboa = helpers.criar_tenant("Rede Lisboa", fuso="Europe/Lisbon")
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        Usuario.objects.create_superuser("raiz", "", SENHA)
    pagina = navegador.new_context(locale="pt-BR").new_page()
    pagina.set_default_timeout(ESPERA_MS)
    pagina.goto(f"{servidor}/admin/login/")
    pagina.fill("#id_username", "raiz")
    pagina.fill("#id_password", SENHA)
    pagina.click("input[type=submit]")
    pagina.goto(f"{servidor}/admin/relatorios/agendamento/add/")

    # The admin loads the form's script in <head>: it must still find the form.
    pagina.select_option("#id_tenant", str(lisboa.pk))
    pagina.check("input[name=frequencia][value=semanal]")
    pagina.check("input[name=dias_da_semana][value='1']")
    pagina.fill("#id_horario", "06:30")

    expect(pagina.locator("[data-campo='previa-descricao']")).to_contain_text(
        "às segundas, às 06:30 (Europe/Lisbon); próximo: "
    )
    expect(pagina.locator("[data-campo='previa-disparo']")).to_have_count(3)
    expect(pagina.locator(".field-dia_do_mes")).to_be_hidden()
    assert not Agendamento.objects.exists()


def test_campos_e_padroes_seguem_o_relatorio_e_a_frequencia(
    tenant: Tenant,
    servidor: str,
    navegador: Browser,  # noqa: F811
) -> None:
    pagina = abrir(navegador, servidor, tenant)
    agrupar = pagina.locator("#campo-agrupar")
    periodo = pagina.locator("#id_periodo")

    # The picker opens on "todo mês" with the period that fits it.
    expect(periodo).to_have_value("mes_anterior")
    pagina.select_option("#id_tipo", "fechamento")
    expect(agrupar).to_be_hidden()
    pagina.select_option("#id_tipo", "vendas")
    expect(agrupar).to_be_visible()

    pagina.check("input[name=frequencia][value=semanal]")
    expect(periodo).to_have_value("semana_anterior")
    pagina.check("input[name=frequencia][value=diaria]")
    expect(periodo).to_have_value("ontem")
    # Once the manager picks a period, the frequency leaves it alone.
    pagina.select_option("#id_periodo", "ano_anterior")
    pagina.check("input[name=frequencia][value=mensal]")
    expect(periodo).to_have_value("ano_anterior")

    # Every N minutes or hours: its two fields in view, the time hidden.
    expect(pagina.locator("#campo-intervalo")).to_be_hidden()
    pagina.check("input[name=frequencia][value=intervalo]")
    expect(pagina.locator("#campo-intervalo")).to_be_visible()
    expect(pagina.locator("#campo-horario")).to_be_hidden()
    pagina.fill("#id_intervalo", "2")
    pagina.select_option("#id_unidade", "horas")
    expect(pagina.locator("[data-campo='previa-descricao']")).to_contain_text(
        "a cada 2 horas (horário de Brasília)"
    )
