"""A scheduled report reaches its readers: one delivery per recipient when its
occurrence's job is `pronto`, the email itself, the signed download link,
the digest of many alerts, and the painel's last delivery.

(The whole story with real clusters and a real SMTP server is
test_agendamentos_processos.py's monthly close.)
"""

from __future__ import annotations

import io
import re
import time
from collections import Counter
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import openpyxl
import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone
from prometheus_client import REGISTRY

from relatorios.agendamentos import agenda, alertas, disparo
from relatorios.models import (
    Agendamento,
    Alerta,
    Entrega,
    EstadoDoJob,
    Evento,
    Ocorrencia,
    RelatorioJob,
    Tenant,
    Webhook,
)
from relatorios.notificacoes import links
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers
from tests.api.test_xlsx import VENDAS

pytestmark = pytest.mark.django_db

CONTABILIDADE = ["ana@contabil.com.br", "bia@contabil.com.br"]


def gancho(tenant: Tenant) -> Webhook:
    # Straight to the table: registering resolves the host (no DNS here).
    return Webhook.objects.create(
        tenant=tenant,
        url="https://exemplo.com.br/ganchos",
        segredo="whsec_" + "a" * 32,
        eventos=["job.pronto"],
    )


def disparada(tenant: Tenant, **campos: Any) -> Ocorrencia:
    """A schedule of the tenant, fired once: its occurrence, with its job."""
    helpers.criar_lojas(tenant, "L001", "L002")
    agendamento = helpers.criar_agendamento(
        tenant, nome="Fechamento mensal", destinatarios=CONTABILIDADE, **campos
    )
    disparo.disparar(agora=agendamento.proximo_disparo)
    return Ocorrencia.objects.get(agendamento=agendamento)


def pronto(job_id: int, resultado: Any = VENDAS) -> None:
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado=resultado,
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(days=1),
    )


def entregas() -> list[Entrega]:
    return list(
        Entrega.objects.filter(evento=Evento.AGENDAMENTO_ENTREGUE).order_by("id")
    )


def enviar_todas() -> None:
    helpers.entregar_em_voo()


def test_pronto_entrega_uma_vez_a_cada_destinatario_e_ao_webhook_nomeado(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    nomeado, outro = gancho(tenant), gancho(tenant)
    ocorrencia = disparada(tenant, webhooks=[nomeado.pk])
    assert alertas.verificar().entregues == 0  # not pronto yet

    pronto(ocorrencia.job_id)
    primeira = alertas.verificar()
    segunda = alertas.verificar()
    # The job is recomputed later (its result expired): delivered already.
    pronto(ocorrencia.job_id)
    terceira = alertas.verificar()
    ocorrencia.refresh_from_db()

    assert (primeira.entregues, segunda.entregues, terceira.entregues) == (1, 0, 0)
    assert ocorrencia.entregue_em is not None
    assert sorted(
        (e.canal, tuple(e.destinatarios), e.webhook_id) for e in entregas()
    ) == [
        ("email", ("ana@contabil.com.br",), None),
        ("email", ("bia@contabil.com.br",), None),
        ("webhook", (), nomeado.pk),
    ]
    assert outro.pk not in {e.webhook_id for e in entregas()}
    assert {e.ocorrencia_id for e in entregas()} == {ocorrencia.pk}
    dados = entregas()[0].payload["data"]
    assert dados["periodo"] == {
        "inicio": ocorrencia.params["inicio"],
        "fim": ocorrencia.params["fim"],
    }
    assert dados["totais"] == VENDAS["totais"]
    assert dados["job"]["id"] == ocorrencia.job_id
    assert "/baixar/" in dados["download"]["url"]


def test_webhook_de_outro_tenant_nao_pode_ser_nomeado(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    alheio = gancho(outro_tenant)

    with pytest.raises(ErroDeParametro) as erro:
        helpers.criar_agendamento(tenant, webhooks=[alheio.pk])

    assert erro.value.campo == "webhooks"


@pytest.mark.parametrize(
    ("forma", "limite", "anexa"),
    [("anexo", 5 * 1024 * 1024, True), ("anexo", 100, False), ("link", 10**7, False)],
)
def test_o_email_diz_o_que_e_traz_a_planilha_ou_so_o_link(
    forma: str,
    limite: int,
    anexa: bool,
    tenant: Tenant,
    settings: Any,
) -> None:
    settings.RELATORIOS_ENTREGA_ANEXO_MAX_BYTES = limite
    settings.RELATORIOS_URL_BASE = "https://relatorios.exemplo.com.br"
    ocorrencia = disparada(tenant, entrega=forma)
    pronto(ocorrencia.job_id)
    alertas.verificar()
    arquivo = f"vendas_{ocorrencia.params['inicio']}_{ocorrencia.params['fim']}"

    enviar_todas()

    assert sorted(m.to[0] for m in mail.outbox) == CONTABILIDADE
    mensagem = mail.outbox[0]
    assert mensagem.subject.startswith("Relatório agendado pronto: Fechamento mensal")
    assert "Receita (R$): 123.446,28" in mensagem.body
    html, tipo = mensagem.alternatives[0]
    assert tipo == "text/html"
    assert "<strong>123.446,28</strong>" in str(html)
    assert re.search(r"https://relatorios.exemplo.com.br/baixar/\S+", mensagem.body)
    assert [nome for nome, _, _ in mensagem.attachments] == [
        f"{arquivo}_job{ocorrencia.job_id}.xlsx"
    ][: int(anexa)]
    assert {e.estado for e in entregas()} == {"entregue"}


def test_a_planilha_anexada_e_o_resultado(tenant: Tenant) -> None:
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    alertas.verificar()

    enviar_todas()
    _, conteudo, tipo = mail.outbox[0].attachments[0]
    folha = openpyxl.load_workbook(io.BytesIO(conteudo), data_only=True).active

    assert tipo.startswith("application/vnd.openxmlformats")
    assert folha["A6"].value == "Período"
    assert [folha.cell(7, c).value for c in (2, 3, 4)] == [
        "L001",
        "Loja São João",
        1200,
    ]
    assert folha["D9"].value == 1205


def test_o_link_abre_o_arquivo_sem_login_e_nada_mais(
    tenant: Tenant, outro_tenant: Tenant, settings: Any
) -> None:
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    alertas.verificar()
    url = entregas()[0].payload["data"]["download"]["url"]
    caminho = url[url.index("/baixar/") :]
    token = caminho.removeprefix("/baixar/")
    anonimo = Client()

    valido = anonimo.get(caminho)
    adulterado = anonimo.get("/baixar/" + token[:-3] + "xyz")
    lixo = anonimo.get("/baixar/nao-e-um-token")
    longo = anonimo.get("/baixar/" + "x" * 5000)
    # Signed by us for another tenant's pairing: opens nothing.
    trocado = anonimo.get(
        "/baixar/"
        + links.assinar(
            job_id=ocorrencia.job_id,
            tenant_id=outro_tenant.pk,
            concluido_em=RelatorioJob.objects.get(pk=ocorrencia.job_id).concluido_em,
        )
    )
    # The result is recomputed: the link was for the earlier one.
    pronto(ocorrencia.job_id)
    recomputado = anonimo.get(caminho)

    assert valido.status_code == 200
    assert valido["Content-Type"].startswith("application/vnd.openxmlformats")
    assert valido["X-Robots-Tag"] == "noindex"
    conteudo = b"".join(valido.streaming_content)
    assert openpyxl.load_workbook(io.BytesIO(conteudo)).active["A6"].value == "Período"
    assert (adulterado.status_code, lixo.status_code, longo.status_code) == (404,) * 3
    assert trocado.status_code == 410
    assert recomputado.status_code == 410
    assert "Link indisponível" in recomputado.content.decode()


def test_o_link_expira(tenant: Tenant, settings: Any) -> None:
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    job = RelatorioJob.objects.get(pk=ocorrencia.job_id)
    token = links.assinar(
        job_id=job.pk, tenant_id=job.tenant_id, concluido_em=job.concluido_em
    )
    settings.RELATORIOS_LINK_VALIDADE_DIAS = 0
    time.sleep(1.1)

    assert Client().get(f"/baixar/{token}").status_code == 410


def test_entrega_que_falha_de_vez_aparece_no_admin_e_na_metrica(
    tenant: Tenant, settings: Any
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 1  # nobody listens
    settings.EMAIL_TIMEOUT = 2
    settings.RELATORIOS_ENTREGA_MAX_TENTATIVAS = 1
    amostra = {"canal": "email", "estado": "falhou", "assunto": "agendamento"}
    antes = REGISTRY.get_sample_value("relatorios_entregas_finalizadas_total", amostra)
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    alertas.verificar()

    enviar_todas()
    suporte = Client()
    suporte.force_login(
        helpers.criar_usuario(None, is_staff=True, is_superuser=True)[0]
    )
    lista = suporte.get(
        "/admin/relatorios/entrega/?estado__exact=falhou"
        "&evento__exact=agendamento.entregue"
    ).content.decode()

    assert {e.estado for e in entregas()} == {"falhou"}
    assert "ConnectionRefusedError" in entregas()[0].ultimo_erro
    assert all(e.destinatarios[0] in lista for e in entregas())
    depois = REGISTRY.get_sample_value("relatorios_entregas_finalizadas_total", amostra)
    assert (depois or 0) - (antes or 0) == 2


def test_dia_de_parada_de_um_agendamento_de_minuto_um_email_por_passada(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_INTERVALO_MINIMO_MIN = 0
    settings.RELATORIOS_EMAILS_SUPORTE = ["suporte@relatorios.com"]
    webhook = gancho(tenant)
    Webhook.objects.filter(pk=webhook.pk).update(eventos=["alerta.aberto"])
    agendamento = helpers.criar_agendamento(
        tenant,
        cron="* * * * *",
        periodo="ontem",
        prazo=timedelta(minutes=1),
        destinatarios=CONTABILIDADE,
    )
    # A day with no cluster: nothing fired; the checker finds it all.
    agora = agendamento.ativo_desde + timedelta(days=1, minutes=2)

    passadas = []
    for _ in range(10):  # three or four passes drain it
        abertos = alertas.verificar(agora=agora).abertos
        resumos = Entrega.objects.filter(evento=Evento.ALERTAS_RESUMO)
        passadas.append((abertos, Counter(e.destinatarios[0] for e in resumos)))

    # Each pass that opened alerts wrote one email to each recipient.
    com_alertas = [por_destino for abertos, por_destino in passadas if abertos]
    assert [set(c.values()) for c in com_alertas] == [
        {n} for n in range(1, len(com_alertas) + 1)
    ]
    alertas_abertos = set(Alerta.objects.values_list("id", flat=True))
    resumos = list(Entrega.objects.filter(evento=Evento.ALERTAS_RESUMO))
    listados: dict[str, set[int]] = {}
    for resumo in resumos:
        ids = {a["id"] for a in resumo.payload["data"]["alertas"]}
        listados.setdefault(resumo.destinatarios[0], set()).update(ids)
    assert len(com_alertas) >= 2
    assert sum(a for a, _ in passadas) == len(alertas_abertos) >= 24 * 60
    assert sorted(listados) == sorted([*CONTABILIDADE, "suporte@relatorios.com"])
    assert all(ids == alertas_abertos for ids in listados.values())
    # No email per alert; one webhook event per alert.
    assert not Entrega.objects.filter(evento="alerta.aberto", canal="email").exists()
    assert Entrega.objects.filter(
        evento="alerta.aberto", canal="webhook"
    ).count() == len(alertas_abertos)


# Activated at :05 and at :19 of an hour: an hour from :19 holds four slots of
# "*/20", which once made this test fail when the suite ran at :x8-:x9.
@pytest.mark.parametrize("minuto", [5, 19])
def test_poucos_alertas_numa_passada_vao_um_a_um(
    tenant: Tenant, settings: Any, minuto: int
) -> None:
    settings.RELATORIOS_INTERVALO_MINIMO_MIN = 0
    agendamento = helpers.criar_agendamento(
        tenant,
        cron="*/20 * * * *",
        periodo="ontem",
        prazo=timedelta(minutes=1),
        destinatarios=CONTABILIDADE,
    )
    inicio = agendamento.ativo_desde.replace(minute=minuto, second=30)
    # Exactly three missed occurrences: from the first slot after activation
    # to just past the third one's deadline.
    primeiro = inicio.replace(second=0, microsecond=0) + timedelta(
        minutes=20 - inicio.minute % 20
    )
    Agendamento.objects.filter(pk=agendamento.pk).update(
        ativo_desde=inicio,
        verificado_ate=inicio,
        proxima_verificacao=primeiro + agendamento.prazo,
    )
    alertas.verificar(agora=primeiro + timedelta(minutes=41, seconds=30))

    assert Alerta.objects.count() == settings.RELATORIOS_ALERTAS_RESUMO_APOS == 3
    assert not Entrega.objects.filter(evento=Evento.ALERTAS_RESUMO).exists()
    # One message per alert and recipient: nobody sees another's address.
    emails = Entrega.objects.filter(evento="alerta.aberto", canal="email")
    assert emails.count() == Alerta.objects.count() * len(CONTABILIDADE)
    assert {len(e.destinatarios) for e in emails} == {1}


def test_o_painel_mostra_a_ultima_entrega_de_cada_agendamento(tenant: Tenant) -> None:
    usuario, _ = helpers.criar_usuario(tenant)
    ocorrencia = disparada(tenant)
    outro = helpers.criar_agendamento(tenant, nome="Estoque semanal")
    pronto(ocorrencia.job_id)
    alertas.verificar()
    cliente = Client()
    cliente.force_login(usuario)

    html = cliente.get("/painel/").content.decode()
    linhas = re.findall(r'<tr data-agendamento="(\d+)">(.*?)</tr>', html, re.S)
    por_id = {int(i): conteudo for i, conteudo in linhas}

    assert (
        f'href="/painel/jobs/{ocorrencia.job_id}/"' in por_id[ocorrencia.agendamento_id]
    )
    entregue = Ocorrencia.objects.get(pk=ocorrencia.pk).entregue_em.astimezone(
        ZoneInfo(tenant.fuso_horario)
    )
    assert f"{entregue:%d/%m/%Y %H:%M}" in por_id[ocorrencia.agendamento_id]
    assert "nenhuma ainda" in por_id[outro.pk]
    assert agenda.proximos_disparos(outro, 1)
