"""Portuguese as Brazilians write it, in the admin and the pages' shared words."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.test import Client
from django.utils import formats, translation

from relatorios.agendamentos.aberturas import Leitura
from relatorios.models import Entrega, Usuario, Webhook, relogio
from tests import helpers


@pytest.mark.parametrize(
    ("intervalo", "texto"),
    [
        (timedelta(seconds=5), "menos de um minuto"),
        (timedelta(minutes=1), "1 minuto"),
        (timedelta(minutes=15), "15 minutos"),
        (timedelta(hours=1), "1 hora"),
        (timedelta(hours=1, minutes=30), "1 hora e 30 minutos"),
        (timedelta(days=2, hours=3, minutes=4), "2 dias e 3 horas"),
    ],
)
def test_espera_por_extenso(intervalo: timedelta, texto: str) -> None:
    assert relogio.por_extenso(intervalo) == texto


def test_ha_nunca_diz_zero_minuto() -> None:
    agora = datetime(2026, 12, 7, 12, tzinfo=UTC)
    assert relogio.ha(agora - timedelta(seconds=20), agora) == "agora há pouco"
    assert relogio.ha(agora - timedelta(minutes=1), agora) == "há 1 minuto"
    assert relogio.ha(agora - timedelta(minutes=3), agora) == "há 3 minutos"


@pytest.mark.parametrize(
    ("leitura", "frase"),
    [
        (
            Leitura(entregas=1, abertas=0, anexo=False, sem_leitura=False),
            "não aberto na única entrega",
        ),
        (
            Leitura(entregas=1, abertas=1, anexo=False, sem_leitura=False),
            "aberto na única entrega",
        ),
        (
            Leitura(entregas=3, abertas=2, anexo=False, sem_leitura=False),
            "aberto em 2 das últimas 3 entregas",
        ),
    ],
)
def test_leitura_no_singular_e_no_plural(leitura: Leitura, frase: str) -> None:
    assert leitura.frase == frase


def test_meses_em_minusculas() -> None:
    with translation.override("pt-br"):
        assert formats.date_format(date(2026, 12, 7), "MONTH_DAY_FORMAT") == (
            "7 de dezembro"
        )
        assert formats.date_format(date(2026, 3, 1), "DATE_FORMAT") == (
            "1 de março de 2026"
        )


@pytest.mark.django_db
def test_entregas_mostram_o_evento_por_extenso() -> None:
    cliente = Client()
    cliente.force_login(Usuario.objects.create_superuser("raiz", "", "senha-123456"))
    Entrega.objects.create(
        mensagem_id="m-1",
        tenant=helpers.criar_tenant(),
        canal="email",
        evento="job.pronto",
        destinatarios=["a@rede.com"],
        payload={},
    )
    html = cliente.get("/admin/relatorios/entrega/").content.decode()
    assert '<span title="job.pronto">relatório pronto</span>' in html


@pytest.mark.django_db
def test_agendamento_no_admin_sem_json_nem_codigo_do_tipo() -> None:
    cliente = Client()
    cliente.force_login(Usuario.objects.create_superuser("raiz", "", "senha-123456"))
    agendamento = helpers.criar_agendamento(
        helpers.criar_tenant(),
        destinatarios=["contab@rede.com", "dono@rede.com"],
    )
    pagina = cliente.get(
        f"/admin/relatorios/agendamento/{agendamento.pk}/change/"
    ).content.decode()
    lista = cliente.get("/admin/relatorios/agendamento/").content.decode()
    assert "contab@rede.com, dono@rede.com" in pagina
    assert "[&quot;contab@rede.com&quot;" not in pagina
    assert '<span title="vendas">Vendas por período e loja</span>' in lista


@pytest.mark.django_db
def test_webhooks_da_pagina_mostram_os_eventos_por_extenso() -> None:
    tenant = helpers.criar_tenant()
    Webhook.objects.create(
        tenant=tenant,
        url="https://exemplo.com.br/ganchos",
        eventos=["job.pronto", "alerta.aberto"],
        segredo="s",
    )
    cliente = Client()
    cliente.force_login(helpers.criar_usuario(tenant)[0])

    html = cliente.get("/painel/webhooks/").content.decode()

    assert "relatório pronto, alerta aberto" in html
    assert "relatório pronto (job.pronto)" in html  # the form's choice
