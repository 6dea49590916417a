"""Schedules and absence alerts with real qcluster processes and the real clock.

Cron expressions here carry a seconds field (RELATORIOS_CRON_SEGUNDOS), so a
"few minutes" of firings take seconds of test time.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import openpyxl
import pytest
import standardwebhooks
from django.test import Client

from relatorios.agendamentos import agenda
from relatorios.models import (
    Agendamento,
    Alerta,
    EstadoDoJob,
    EstadoOcorrencia,
    Ocorrencia,
    RelatorioJob,
    RelatorioTentativa,
    Tenant,
    Usuario,
    permissoes,
)
from relatorios.notificacoes import webhooks
from tests import helpers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

RAPIDO = {
    "RELATORIOS_CRON_SEGUNDOS": 1,
    # Firings seconds apart (the crons below).
    "RELATORIOS_INTERVALO_MINIMO_MIN": 0,
    "RELATORIOS_AGENDADOR_S": 0.3,
    "RELATORIOS_VARREDURA_S": 0.5,
    "RELATORIOS_BATIMENTO_S": 0.5,
    "RELATORIOS_ORFAO_APOS_S": 4,
}
SP = ZoneInfo("America/Sao_Paulo")


@pytest.fixture(autouse=True)
def rapido(ajustes: Callable[..., None]) -> None:
    ajustes(**RAPIDO)


def agendar(tenant: Tenant, cron: str, **campos: object) -> Agendamento:
    return agenda.criar(
        tenant_id=tenant.pk,
        tipo="teste_fechamento",
        periodo="ontem",
        cron=cron,
        usuario_id=None,
        **({"prazo": timedelta(seconds=2)} | campos),
    )


def segundos_a_frente(n: int, passo: int) -> tuple[str, list[datetime]]:
    """A cron that fires `n` times, `passo` seconds apart, starting soon, all in
    one local minute (waits for the next minute when this one is too short)."""
    agora = datetime.now(SP)
    if agora.second + 3 + n * passo >= 59:
        time.sleep(60 - agora.second + 0.1)
        agora = datetime.now(SP)
    base = agora.replace(microsecond=0) + timedelta(seconds=3)
    instantes = [base + timedelta(seconds=i * passo) for i in range(n)]
    segundos = ",".join(str(i.second) for i in instantes)
    return f"{base.minute} {base.hour} * * * {segundos}", instantes


def test_tres_clusters_disparam_cada_horario_uma_vez(cluster, ajustes) -> None:
    ajustes(RELATORIOS_DISPARO_TOLERANCIA_S=60)
    tenant = helpers.criar_tenant()
    helpers.criar_lojas(tenant, "L001", "L002")
    for _ in range(3):
        cluster()
    cron, instantes = segundos_a_frente(8, 2)
    agendamento = agendar(tenant, cron, prazo=timedelta(minutes=5))
    limite = instantes[-1] + timedelta(seconds=1)
    helpers.esperar(
        lambda: (
            Ocorrencia.objects.filter(agendamento=agendamento).count() == 8
            and datetime.now(SP) > limite
        ),
        timeout=60,
        descricao="as oito ocorrências",
    )
    time.sleep(1.5)  # a late duplicate would show up now
    ocorrencias = list(
        Ocorrencia.objects.filter(agendamento=agendamento).order_by("planejado_para")
    )
    assert [o.planejado_para for o in ocorrencias] == instantes
    assert {o.estado for o in ocorrencias} == {EstadoOcorrencia.DISPARADA}
    jobs = {o.job_id for o in ocorrencias}
    # Same period (yesterday), same chave: every firing answered by one job.
    assert None not in jobs
    assert RelatorioJob.objects.count() == len(jobs) == 1
    job = RelatorioJob.objects.get()
    helpers.esperar(
        lambda: helpers.job(job.pk).status == EstadoDoJob.PRONTO, descricao="job pronto"
    )
    assert RelatorioTentativa.objects.filter(job=job).count() == 1


def test_sem_cluster_algum_o_alerta_abre_e_so_a_ultima_recupera(
    cluster, ajustes
) -> None:
    ajustes(RELATORIOS_DISPARO_TOLERANCIA_S=1)
    tenant = helpers.criar_tenant()
    helpers.criar_lojas(tenant, "L001")
    cron, instantes = segundos_a_frente(3, 2)
    agendamento = agendar(tenant, cron, prazo=timedelta(seconds=1))
    # Every cluster is down through the last deadline.
    espera = (instantes[-1] + timedelta(seconds=2.5) - datetime.now(SP)).total_seconds()
    time.sleep(max(0.0, espera))
    assert not Ocorrencia.objects.exists()
    cluster()
    helpers.esperar(
        lambda: Alerta.objects.filter(ocorrencia__agendamento=agendamento).count() == 3,
        timeout=30,
        descricao="um alerta por ocorrência perdida",
    )
    ocorrencias = list(
        Ocorrencia.objects.filter(agendamento=agendamento).order_by("planejado_para")
    )
    assert [o.planejado_para for o in ocorrencias] == instantes
    assert [o.estado for o in ocorrencias] == ["pulada", "pulada", "disparada"]
    assert [o.job_id is None for o in ocorrencias] == [True, True, False]
    assert RelatorioJob.objects.count() == 1
    recuperado = ocorrencias[-1]
    helpers.esperar(
        lambda: helpers.job(recuperado.job_id).status == EstadoDoJob.PRONTO,
        descricao="o job de recuperação pronto",
    )
    # Late, then pronto: its alert closes by itself; the skipped stay open.
    helpers.esperar(
        lambda: Alerta.objects.filter(
            ocorrencia=recuperado, fechado_em__isnull=False
        ).exists(),
        timeout=30,
        descricao="o alerta da recuperação fechado",
    )
    abertos = Alerta.objects.filter(
        ocorrencia__agendamento=agendamento, fechado_em__isnull=True
    )
    assert sorted(a.ocorrencia.planejado_para for a in abertos) == instantes[:2]


class Recebedor:
    """A real local HTTP endpoint that verifies each Standard Webhooks
    signature with the `standardwebhooks` library, as a tenant's would."""

    def __init__(self) -> None:
        self.segredo = ""
        self.recebidos: list[dict[str, Any]] = []
        self.ids: list[str] = []
        self.invalidos = 0
        recebedor = self

        class Tratador(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                corpo = self.rfile.read(int(self.headers["Content-Length"]))
                try:
                    evento = standardwebhooks.Webhook(recebedor.segredo).verify(
                        corpo, dict(self.headers)
                    )
                except standardwebhooks.WebhookVerificationError:
                    recebedor.invalidos += 1
                    self.send_response(400)
                else:
                    recebedor.recebidos.append(evento)
                    recebedor.ids.append(self.headers["webhook-id"])
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.servidor = ThreadingHTTPServer(("127.0.0.1", 0), Tratador)
        self.url = f"http://127.0.0.1:{self.servidor.server_address[1]}/ganchos"
        threading.Thread(target=self.servidor.serve_forever, daemon=True).start()

    def tipos(self) -> list[str]:
        return [evento["type"] for evento in self.recebidos]


@pytest.fixture
def recebedor() -> Iterator[Recebedor]:
    r = Recebedor()
    yield r
    r.servidor.shutdown()


def emails(pasta: Path) -> list[Any]:
    if not pasta.exists():
        return []
    mensagens = []
    for arquivo in sorted(pasta.iterdir()):
        # The filebased backend writes each message followed by a line of dashes.
        for bloco in arquivo.read_bytes().split(b"-" * 79):
            if bloco.strip():
                mensagens.append(
                    message_from_bytes(bloco.strip(), policy=policy.default)
                )
    return mensagens


def test_fechamento_mensal_falha_alerta_e_termina_com_a_contabilidade_com_o_arquivo(
    cluster, ajustes, recebedor, smtp, servidor
) -> None:
    # The clusters send through a real SMTP server; links point at the real
    # web server, which a recipient without a login downloads from.
    ajustes(
        RELATORIOS_WEBHOOK_PERMITIR_LOCAL=1,
        RELATORIOS_ENTREGA_BACKOFF_S=0.2,
        RELATORIOS_EMAILS_SUPORTE="suporte@relatorios.com",
        RELATORIOS_URL_BASE=servidor,
        **smtp.ambiente(),
    )
    tenant = helpers.criar_tenant("Rede Sul")
    lojas = helpers.criar_lojas(tenant, "L001", "L002")
    lojas[1].nome = ""  # the bad data the close trips on
    lojas[1].save()
    webhook = webhooks.registrar_webhook(
        tenant_id=tenant.pk,
        url=recebedor.url,
        eventos=["alerta.aberto", "alerta.fechado", "job.falhou", "job.pronto"],
        usuario_id=None,
    )
    recebedor.segredo = webhook.segredo
    cron, instantes = segundos_a_frente(1, 1)
    agendamento = agendar(
        tenant,
        cron,
        prazo=timedelta(minutes=10),
        nome="Fechamento mensal",
        destinatarios=["contabilidade@redesul.com"],
    )
    cluster()
    cluster()  # two clusters: still one firing

    alerta = helpers.esperar(
        lambda: Alerta.objects.filter(ocorrencia__agendamento=agendamento).first(),
        timeout=60,
        descricao="o alerta do fechamento que falhou",
    )
    ocorrencia = Ocorrencia.objects.get(agendamento=agendamento)
    assert ocorrencia.planejado_para == instantes[0]
    job = helpers.job(ocorrencia.job_id)
    assert job.status == EstadoDoJob.FALHOU
    assert "loja sem nome: L002" in job.erro
    assert "loja sem nome: L002" in alerta.motivo
    helpers.esperar(
        lambda: "alerta.aberto" in recebedor.tipos(), descricao="o webhook do alerta"
    )
    para_o_alerta = helpers.esperar(
        lambda: smtp.para("contabilidade@redesul.com"),
        descricao="o e-mail do alerta",
    )
    # One message per address: accounting never sees support's address.
    assert para_o_alerta[0]["To"] == "contabilidade@redesul.com"
    assert "suporte@relatorios.com" not in str(para_o_alerta[0])
    assert "Fechamento mensal" in para_o_alerta[0]["Subject"]
    local = ocorrencia.planejado_para.astimezone(SP)
    assert f"{local:%d/%m/%Y %H:%M} (America/Sao_Paulo)" in str(
        para_o_alerta[0].get_content()
    )

    # Support fixes the data and re-runs the job from the admin.
    lojas[1].nome = "Loja Norte"
    lojas[1].save()
    atendente = Usuario.objects.create_user("atendente", is_staff=True)
    atendente.groups.add(permissoes.criar_grupo_suporte())
    admin = Client()
    admin.force_login(atendente)
    resposta = admin.post(
        "/admin/relatorios/relatoriojob/",
        {"action": "reexecutar", "_selected_action": [job.pk], "index": 0},
    )
    assert resposta.status_code == 302
    helpers.esperar(
        lambda: helpers.job(job.pk).status == EstadoDoJob.PRONTO, descricao="job pronto"
    )
    helpers.esperar(
        lambda: Alerta.objects.get(pk=alerta.pk).fechado_em is not None,
        timeout=30,
        descricao="o alerta fechado sozinho",
    )
    helpers.esperar(
        lambda: "alerta.fechado" in recebedor.tipos(),
        descricao="o webhook do fechamento",
    )
    time.sleep(1)  # a duplicate delivery would arrive now
    assert Ocorrencia.objects.filter(agendamento=agendamento).count() == 1
    assert RelatorioJob.objects.count() == 1
    assert Alerta.objects.count() == 1
    assert recebedor.invalidos == 0
    assert sorted(recebedor.tipos()) == sorted(
        ["job.falhou", "alerta.aberto", "job.pronto", "alerta.fechado"]
    )
    assert len(set(recebedor.ids)) == len(recebedor.ids)
    # Accounting: the alert, then the report itself, once each.
    para_a_contabilidade = helpers.esperar(
        lambda: (
            lista if len(lista := smtp.para("contabilidade@redesul.com")) >= 2 else None
        ),
        timeout=30,
        descricao="o e-mail do relatório pronto",
    )
    time.sleep(1)  # a duplicate would arrive now
    assert len(smtp.para("contabilidade@redesul.com")) == 2
    assert len(smtp.para("suporte@relatorios.com")) == 1  # the alert only
    entregue = para_a_contabilidade[1]
    assert entregue["To"] == "contabilidade@redesul.com"
    assert (
        str(entregue["Subject"])
        .strip()
        .startswith("Relatório agendado pronto: Fechamento mensal")
    )
    texto = entregue.get_body(preferencelist=("plain",)).get_content()
    html = entregue.get_body(preferencelist=("html",)).get_content()
    assert "Fechamento mensal" in texto
    assert "<strong>Fechamento mensal</strong>" in html
    anexos = list(entregue.iter_attachments())
    assert [a.get_filename() for a in anexos] == [
        f"teste_fechamento_{ocorrencia.params['inicio']}_"
        f"{ocorrencia.params['fim']}_job{job.pk}.xlsx"
    ]
    planilha = openpyxl.load_workbook(io.BytesIO(anexos[0].get_content())).active
    # The table, under the header block (excel.TOPO).
    assert [[c.value for c in linha] for linha in planilha.iter_rows(min_row=6)] == [
        ["loja", "nome"],
        ["L001", lojas[0].nome],
        ["L002", "Loja Norte"],
    ]
    # The signed link in the email opens the same file, with no login.
    link = re.search(r"(http://\S+/baixar/\S+)", texto).group(1)
    with urllib.request.urlopen(link, timeout=60) as resposta:
        baixado = resposta.read()
        tipo_do_arquivo = resposta.headers["Content-Type"]
    assert tipo_do_arquivo.startswith("application/vnd.openxmlformats")
    relida = openpyxl.load_workbook(io.BytesIO(baixado)).active
    assert [[c.value for c in linha] for linha in relida.iter_rows()] == [
        [c.value for c in linha] for linha in planilha.iter_rows()
    ]
    corpo = json.dumps(recebedor.recebidos[recebedor.tipos().index("alerta.aberto")])
    assert str(alerta.pk) in corpo
