"""/baixar/<token> and the .xlsx downloads: a file built once per result and
streamed from storage, limits per link and per address, links that end
when their delivery does, and a size bound."""

from __future__ import annotations

import io
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import timedelta
from email.message import Message
from typing import Any

import openpyxl
import pytest
from django.test import Client
from django.utils import timezone

from relatorios.agendamentos import agenda, alertas, disparo
from relatorios.apresentacao import excel
from relatorios.jobs import suporte
from relatorios.models import (
    Arquivo,
    Entrega,
    EstadoDoJob,
    Evento,
    Ocorrencia,
    RelatorioJob,
    Tenant,
    Webhook,
)
from relatorios.notificacoes import links
from tests import helpers, processos

LEITORES = ["ana@contabil.com.br", "bia@contabil.com.br"]


def resultado(n: int) -> dict[str, Any]:
    linhas = [
        {"loja": f"L{i % 7:03d}", "produto": f"Produto {i}", "itens": i % 13}
        for i in range(n)
    ]
    return {"linhas": linhas, "totais": {"itens": sum(x["itens"] for x in linhas)}}


def entregue(tenant: Tenant, *, linhas: int = 30, **campos: Any) -> Ocorrencia:
    """A schedule fired, its job `pronto`, its deliveries written."""
    agendamento = helpers.criar_agendamento(
        tenant,
        tipo="teste_volumoso",
        periodo="ontem",
        cron="0 3 * * *",
        destinatarios=LEITORES,
        **campos,
    )
    disparo.disparar(agora=agendamento.proximo_disparo)
    ocorrencia = Ocorrencia.objects.get(agendamento=agendamento)
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado=resultado(linhas),
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(days=1),
    )
    alertas.verificar()
    return ocorrencia


def link(ocorrencia: Ocorrencia, email: str | None = None) -> str:
    """The path of the link sent in this occurrence's delivery to `email` (or
    to its webhook, when None)."""
    entregas = Entrega.objects.filter(
        ocorrencia_id=ocorrencia.pk, evento=Evento.AGENDAMENTO_ENTREGUE
    )
    for entrega in entregas:
        if (email is None and entrega.webhook_id) or entrega.destinatarios == [email]:
            url = entrega.payload["data"]["download"]["url"]
            return str(url[url.index("/baixar/") :])
    raise AssertionError(f"no delivery to {email}")


@pytest.fixture
def construcoes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The workbooks built in this process, by job."""
    feitas: list[int] = []
    original = excel.gravar_xlsx

    def contando(job: RelatorioJob, destino: Any) -> int:
        feitas.append(job.pk)
        return original(job, destino)

    monkeypatch.setattr(excel, "gravar_xlsx", contando)
    return feitas


@pytest.mark.django_db
def test_o_arquivo_e_feito_uma_vez_e_servido_do_que_foi_guardado(
    tenant: Tenant, construcoes: list[int]
) -> None:
    ocorrencia = entregue(tenant)
    caminho = link(ocorrencia, LEITORES[0])
    outro = link(ocorrencia, LEITORES[1])
    _, token = helpers.criar_usuario(tenant)
    api = helpers.cliente_com_token(token)

    respostas = [Client().get(caminho), Client().get(outro)]
    pela_api = api.get(f"/relatorios/jobs/{ocorrencia.job_id}/resultado.xlsx")
    corpos = [b"".join(r.streaming_content) for r in [*respostas, pela_api]]

    assert [r.status_code for r in respostas] == [200, 200]
    assert pela_api.status_code == 200
    assert construcoes == [ocorrencia.job_id]
    assert len(set(corpos)) == 1
    assert int(respostas[0]["Content-Length"]) == len(corpos[0])
    folha = openpyxl.load_workbook(io.BytesIO(corpos[0])).active
    # The header block, a blank row, the header and the lines (no numeric
    # column to total).
    assert folha.max_row == 5 + 1 + 30
    assert Arquivo.objects.get().tamanho == len(corpos[0])


@pytest.mark.django_db
def test_cada_link_e_cada_endereco_tem_seu_limite(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_DOWNLOAD_LIMITE_LINK = 2
    settings.RELATORIOS_DOWNLOAD_LIMITE_ENDERECO = 3
    ocorrencia = entregue(tenant)
    primeiro, segundo = link(ocorrencia, LEITORES[0]), link(ocorrencia, LEITORES[1])

    mesmo_link = [Client().get(primeiro).status_code for _ in range(3)]
    de_outro_endereco = Client(REMOTE_ADDR="10.9.8.7").get(segundo)
    mesmo_endereco = [Client().get(segundo).status_code for _ in range(2)]
    recusado = Client().get(segundo)

    assert mesmo_link == [200, 200, 429]
    assert de_outro_endereco.status_code == 200
    # The address has had three downloads (two of the first link, one refused
    # counts too): the second link's next is its fourth.
    assert mesmo_endereco == [429, 429]
    assert recusado.status_code == 429
    assert int(recusado["Retry-After"]) >= 1
    assert recusado["Refresh"] == recusado["Retry-After"]


@pytest.mark.django_db
def test_o_link_acaba_com_o_destinatario_com_o_agendamento_e_com_o_suporte(
    tenant: Tenant,
) -> None:
    ocorrencia = entregue(tenant)
    ana, bia = link(ocorrencia, LEITORES[0]), link(ocorrencia, LEITORES[1])
    agendamento = ocorrencia.agendamento

    antes = [Client().get(ana).status_code, Client().get(bia).status_code]
    agenda.alterar_entrega(
        agendamento_id=agendamento.pk, tenant_id=tenant.pk, destinatarios=[LEITORES[1]]
    )
    sem_ana = [Client().get(ana).status_code, Client().get(bia).status_code]
    agenda.excluir(agendamento_id=agendamento.pk, tenant_id=tenant.pk)
    sem_agendamento = Client().get(bia)

    assert antes == [200, 200]
    assert sem_ana == [410, 200]
    assert sem_agendamento.status_code == 410
    assert "Link indisponível" in sem_agendamento.content.decode()


@pytest.mark.django_db
def test_expirar_resultado_acaba_com_todos_os_links_do_resultado(
    tenant: Tenant,
) -> None:
    ocorrencia = entregue(tenant)
    ana = link(ocorrencia, LEITORES[0])
    job = RelatorioJob.objects.get(pk=ocorrencia.job_id)
    # A link of before links named their delivery: the result alone.
    antigo = "/baixar/" + links.assinar(
        job_id=job.pk, tenant_id=job.tenant_id, concluido_em=job.concluido_em
    )
    assert [Client().get(ana).status_code, Client().get(antigo).status_code] == [
        200,
        200,
    ]

    assert suporte.expirar_resultado(job_id=job.pk).feita

    assert Client().get(ana).status_code == 410
    assert Client().get(antigo).status_code == 410
    assert not Arquivo.objects.filter(job_id=job.pk).exists()


@pytest.mark.django_db
def test_o_link_do_webhook_acaba_quando_o_webhook_e_desativado(
    tenant: Tenant,
) -> None:
    gancho = Webhook.objects.create(
        tenant=tenant,
        url="https://exemplo.com.br/ganchos",
        segredo="whsec_" + "a" * 32,
        eventos=["agendamento.entregue"],
    )
    ocorrencia = entregue(tenant, webhooks=[gancho.pk])
    do_webhook = link(ocorrencia)

    antes = Client().get(do_webhook).status_code
    Webhook.objects.filter(pk=gancho.pk).update(ativo=False)

    assert antes == 200
    assert Client().get(do_webhook).status_code == 410


@pytest.mark.django_db
def test_resultado_grande_demais_para_planilha_vai_em_csv(
    tenant: Tenant, settings: Any, construcoes: list[int]
) -> None:
    settings.RELATORIOS_XLSX_MAX_LINHAS = 10
    ocorrencia = entregue(tenant, linhas=25)
    _, token = helpers.criar_usuario(tenant)

    pelo_link = Client().get(link(ocorrencia, LEITORES[0]))
    pela_api = helpers.cliente_com_token(token).get(
        f"/relatorios/jobs/{ocorrencia.job_id}/resultado.xlsx"
    )

    assert pelo_link.status_code == 200
    assert pelo_link["Content-Type"].startswith("text/csv")
    assert b"".join(pelo_link.streaming_content).count(b"\r\n") == 25 + 1
    assert pela_api.status_code == 409
    assert "CSV" in pela_api.json()["erro"]
    assert construcoes == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.processos
def test_cliques_simultaneos_num_link_fazem_o_arquivo_uma_vez(
    pasta_saida: Any, ajustes: Callable[..., None]
) -> None:
    ajustes(
        RELATORIOS_DOWNLOAD_LIMITE_LINK=100, RELATORIOS_DOWNLOAD_LIMITE_ENDERECO=100
    )
    tenant = helpers.criar_tenant("Rede Clique")
    ocorrencia = entregue(tenant, linhas=20_000)
    web, url = processos.iniciar_web(pasta_saida / "web.log")
    caminho = link(ocorrencia, LEITORES[0])
    ja_escrito = len(web.texto_do_log())  # the log file outlives a run
    respostas: list[tuple[int, Message, bytes]] = []

    def clicar() -> None:
        try:
            with urllib.request.urlopen(url + caminho, timeout=60) as resposta:
                respostas.append((resposta.status, resposta.headers, resposta.read()))
        except urllib.error.HTTPError as erro:
            respostas.append((erro.code, erro.headers, erro.read()))

    try:
        cliques = [threading.Thread(target=clicar) for _ in range(4)]
        for clique in cliques:
            clique.start()
        for clique in cliques:
            clique.join()
        clicar()  # after the build: from storage
        depois = respostas.pop()
        log = web.texto_do_log()[ja_escrito:]
    finally:
        web.parar()

    assert {status for status, _, _ in respostas} <= {200, 503}
    assert depois[0] == 200
    arquivos = {corpo for status, _, corpo in [*respostas, depois] if status == 200}
    assert len(arquivos) == 1
    assert log.count("arquivo gerado") == 1
    for status, cabecalhos, _ in respostas:
        if status == 503:
            assert int(cabecalhos["Retry-After"]) >= 1
            assert cabecalhos["Refresh"] == cabecalhos["Retry-After"]
