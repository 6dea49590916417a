"""Webhooks and emails: the outbox, the signed delivery, retries, SSRF, the API."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import standardwebhooks
from django.core import mail
from django.core.mail import EmailMessage
from django.db import transaction
from django.test import Client
from django.utils import timezone
from django_q.models import OrmQ

from relatorios.fila import mensagens
from relatorios.jobs import ciclo, pedidos, suporte
from relatorios.models import (
    Agendamento,
    Alerta,
    Entrega,
    EstadoDoJob,
    EstadoEntrega,
    EstadoOcorrencia,
    Inscricao,
    Ocorrencia,
    RelatorioJob,
    Tenant,
    Usuario,
    Webhook,
)
from relatorios.notificacoes import destinos, entrega, saida, webhooks
from relatorios.notificacoes.email import inscrever, mensagem_de_email
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers
from tests.processos import Processo

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes"}
# The same request from /painel/, with the "avisar por e-mail" box ticked.
PEDIDO_DO_PAINEL = {
    "vendas-inicio": "2026-01-01",
    "vendas-fim": "2026-01-31",
    "vendas-agrupar": "mes",
    "vendas-notificar_email": "on",
}


class Receptor:
    """A real HTTP receiver on 127.0.0.1; answers from a script, records all."""

    def __init__(self) -> None:
        self.recebidas: list[tuple[dict[str, str], bytes]] = []
        # One answer per request, in order: a status, or ("travar", seconds).
        self.roteiro: list[Any] = []
        receptor = self

        class Tratador(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                corpo = self.rfile.read(int(self.headers["Content-Length"]))
                receptor.recebidas.append((dict(self.headers), corpo))
                resposta = receptor.roteiro.pop(0) if receptor.roteiro else 200
                if isinstance(resposta, tuple):
                    time.sleep(resposta[1])
                    resposta = 200
                self.send_response(resposta)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.servidor = ThreadingHTTPServer(("127.0.0.1", 0), Tratador)
        self.servidor.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.servidor.server_address[1]}/ganchos?x=1"
        threading.Thread(target=self.servidor.serve_forever, daemon=True).start()

    def verificadas(self, segredo: str) -> list[Any]:
        """Every request's payload, each after checking its signature."""
        verificador = standardwebhooks.Webhook(segredo)
        return [
            verificador.verify(corpo, cabecalhos)
            for cabecalhos, corpo in self.recebidas
        ]


@pytest.fixture
def receptor() -> Iterator[Receptor]:
    receptor = Receptor()
    yield receptor
    receptor.servidor.shutdown()
    receptor.servidor.server_close()


@pytest.fixture
def local(ajustes: Callable[..., None]) -> None:
    # Development mode: http:// and 127.0.0.1, here and in child processes.
    ajustes(RELATORIOS_WEBHOOK_PERMITIR_LOCAL=True)


def webhook(tenant: Tenant, url: str, eventos: list[str] | None = None) -> Webhook:
    return webhooks.registrar_webhook(
        tenant_id=tenant.pk,
        url=url,
        eventos=eventos or ["job.pronto", "job.falhou"],
        usuario_id=None,
    )


def submeter(tenant: Tenant, **params: Any) -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={**PEDIDO, **params},
        usuario_id=None,
    ).job.id


def concluir(job_id: int) -> None:
    reivindicado = ciclo.reivindicar(job_id=job_id)
    assert reivindicado is not None
    assert ciclo.concluir(
        tentativa=reivindicado.tentativa, resultado={"linhas": []}, validade_s=600
    )


def mensagens_de_entrega() -> list[int]:
    return [
        int(m.task["args"][0])
        for m in OrmQ.objects.all()
        if m.task.get("func") == mensagens.TAREFA_ENTREGA
    ]


def linha_da_entrega(entrega_id: int) -> Entrega:
    return Entrega.objects.get(pk=entrega_id)


# --- Delivery through a real cluster ----------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.processos
def test_job_pronto_no_cluster_entrega_job_pronto_assinado(
    tenant: Tenant,
    local: None,
    receptor: Receptor,
    cluster: Callable[..., Processo],
) -> None:
    gancho = webhook(tenant, receptor.url)
    job_id = submeter(tenant)
    cluster()

    helpers.esperar(lambda: receptor.recebidas, descricao="webhook recebido")
    [payload] = receptor.verificadas(gancho.segredo)
    entregue = helpers.esperar(
        lambda: Entrega.objects.filter(estado=EstadoEntrega.ENTREGUE).first(),
        descricao="entrega registrada",
    )

    assert payload["type"] == "job.pronto"
    assert payload["data"]["id"] == job_id
    assert payload["data"]["status"] == EstadoDoJob.PRONTO
    assert payload["data"]["url"] == f"/relatorios/jobs/{job_id}"
    assert "erro" not in payload["data"]
    assert receptor.recebidas[0][0]["webhook-id"] == entregue.mensagem_id
    assert entregue.tentativas == 1
    assert entregue.ultimo_status == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.processos
def test_receptor_que_falha_duas_vezes_recebe_na_terceira(
    tenant: Tenant,
    local: None,
    ajustes: Callable[..., None],
    receptor: Receptor,
    cluster: Callable[..., Processo],
) -> None:
    ajustes(RELATORIOS_ENTREGA_BACKOFF_S=0.2, RELATORIOS_ENTREGA_BACKOFF_MAX_S=0.5)
    receptor.roteiro = [500, 503, 204]
    gancho = webhook(tenant, receptor.url)
    job_id = submeter(tenant)
    concluir(job_id)
    cluster()

    entregue = helpers.esperar(
        lambda: Entrega.objects.filter(estado=EstadoEntrega.ENTREGUE).first(),
        descricao="entregue na terceira tentativa",
    )

    payloads = receptor.verificadas(gancho.segredo)
    assert len(payloads) == 3
    assert {cabecalhos["webhook-id"] for cabecalhos, _ in receptor.recebidas} == {
        entregue.mensagem_id
    }
    assert entregue.tentativas == 3
    assert entregue.ultimo_status == 204
    assert entregue.ultimo_erro == ""


# --- Delivery in this process -----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_receptor_que_trava_registra_o_erro_e_e_tentado_de_novo(
    tenant: Tenant, local: None, ajustes: Callable[..., None], receptor: Receptor
) -> None:
    ajustes(
        RELATORIOS_WEBHOOK_TIMEOUT_S=0.5,
        RELATORIOS_ENTREGA_BACKOFF_S=0.1,
        RELATORIOS_ENTREGA_BACKOFF_MAX_S=0.2,
    )
    receptor.roteiro = [("travar", 2)]
    webhook(tenant, receptor.url)
    job_id = submeter(tenant)
    concluir(job_id)
    [entrega_id] = Entrega.objects.values_list("id", flat=True)

    inicio = time.monotonic()
    estado = entrega.entregar(entrega_id=entrega_id)
    duracao = time.monotonic() - inicio
    travada = linha_da_entrega(entrega_id)
    time.sleep(0.5)
    # Its backoff elapsed: the sweep gives it a slot again.
    assert saida.varrer().despachadas == 1
    de_novo = entrega.entregar(entrega_id=entrega_id)

    assert estado == EstadoEntrega.PENDENTE
    assert duracao < 1.5
    assert travada.tentativas == 1
    assert "sem resposta em 0.5 s" in travada.ultimo_erro
    assert travada.proxima_em > travada.criado_em
    assert travada.em_curso_ate is None
    assert de_novo == EstadoEntrega.ENTREGUE
    assert linha_da_entrega(entrega_id).tentativas == 2


@pytest.mark.django_db(transaction=True)
def test_ultima_tentativa_sem_sucesso_deixa_a_entrega_falhou(
    tenant: Tenant, local: None, ajustes: Callable[..., None], receptor: Receptor
) -> None:
    ajustes(RELATORIOS_ENTREGA_MAX_TENTATIVAS=1)
    receptor.roteiro = [302]  # a redirect is not followed: not delivered
    webhook(tenant, receptor.url)
    job_id = submeter(tenant)
    concluir(job_id)
    [entrega_id] = Entrega.objects.values_list("id", flat=True)

    estado = entrega.entregar(entrega_id=entrega_id)

    assert estado == EstadoEntrega.FALHOU
    assert linha_da_entrega(entrega_id).ultimo_status == 302
    assert saida.reenviar(entrega_id=entrega_id)
    reenviada = linha_da_entrega(entrega_id)
    assert (reenviada.estado, reenviada.tentativas) == (EstadoEntrega.PENDENTE, 0)
    assert mensagens_de_entrega().count(entrega_id) == 2


@pytest.mark.django_db
def test_uma_entrega_reivindicada_nao_e_enviada_de_novo(
    tenant: Tenant, local: None, receptor: Receptor
) -> None:
    webhook(tenant, receptor.url)
    job_id = submeter(tenant)
    concluir(job_id)
    [entrega_id] = Entrega.objects.values_list("id", flat=True)

    primeira = entrega.entregar(entrega_id=entrega_id)
    segunda = entrega.entregar(entrega_id=entrega_id)

    assert (primeira, segunda) == (EstadoEntrega.ENTREGUE, None)
    assert len(receptor.recebidas) == 1


# --- The outbox -------------------------------------------------------------------


@pytest.mark.django_db
def test_mudanca_de_estado_desfeita_nao_deixa_entrega(
    tenant: Tenant, local: None, receptor: Receptor
) -> None:
    webhook(tenant, receptor.url)
    job_id = submeter(tenant)

    dentro: list[int] = []

    def falhar_e_desfazer() -> None:
        with transaction.atomic():
            assert suporte.marcar_como_falhou(job_id=job_id, motivo="teste").feita
            dentro.append(Entrega.objects.count())
            raise RuntimeError("desfaz")

    with pytest.raises(RuntimeError):
        falhar_e_desfazer()

    assert dentro == [1]
    assert helpers.job(job_id).status == EstadoDoJob.PENDENTE
    assert Entrega.objects.count() == 0
    assert mensagens_de_entrega() == []


@pytest.mark.django_db
def test_job_falhou_gera_entrega_com_o_erro_e_sua_mensagem(
    tenant: Tenant, local: None, receptor: Receptor
) -> None:
    webhook(tenant, receptor.url, ["job.falhou"])
    outro = helpers.criar_tenant()
    webhook(outro, receptor.url)
    job_id = submeter(tenant)

    assert suporte.marcar_como_falhou(job_id=job_id, motivo="base fora do ar").feita

    [nova] = Entrega.objects.all()
    assert nova.evento == "job.falhou"
    assert nova.payload["data"]["erro"] == "base fora do ar"
    assert nova.tenant_id == tenant.pk
    assert mensagens_de_entrega() == [nova.pk]


@pytest.mark.django_db
def test_concluir_sem_webhook_nem_inscrito_nao_cria_entrega(tenant: Tenant) -> None:
    job_id = submeter(tenant)

    concluir(job_id)

    assert helpers.job(job_id).status == EstadoDoJob.PRONTO
    assert Entrega.objects.count() == 0


# --- Email on completion (notificar_email) ----------------------------------------


@pytest.mark.django_db
def test_notificar_email_envia_um_email_por_inscrito_quando_o_job_termina(
    tenant: Tenant,
) -> None:
    ana = helpers.criar_usuario(tenant, email="ana@example.com")[1]
    bia = helpers.criar_usuario(tenant, email="bia@example.com")[1]
    pedido = {**PEDIDO, "notificar_email": True}
    ids = [
        helpers.cliente_com_token(t)
        .post("/relatorios/vendas", pedido, content_type="application/json")
        .json()["id"]
        for t in (ana, bia, ana)
    ]
    job_id = ids[0]
    concluir(job_id)
    helpers.entregar_em_voo()
    for entrega_id in Entrega.objects.values_list("id", flat=True):
        assert entrega.entregar(entrega_id=entrega_id) is None  # sent once

    assert ids == [job_id] * 3
    assert "notificar_email" not in helpers.job(job_id).params
    assert sorted(m.to[0] for m in mail.outbox) == [
        "ana@example.com",
        "bia@example.com",
    ]
    assert all(len(m.to) == 1 for m in mail.outbox)
    assert mail.outbox[0].subject.startswith("Relatório pronto")
    assert f"/painel/jobs/{job_id}/" in mail.outbox[0].body
    assert Inscricao.objects.count() == 0


@pytest.mark.django_db
def test_inscricao_de_job_que_ja_terminou_e_atendida_pela_varredura(
    tenant: Tenant,
) -> None:
    job_id = submeter(tenant)
    concluir(job_id)
    inscrever(job_id=job_id, email="tarde@example.com")

    primeira = saida.varrer()
    segunda = saida.varrer()

    [email] = Entrega.objects.all()
    assert (primeira.inscricoes_atendidas, segunda.inscricoes_atendidas) == (1, 0)
    assert email.destinatarios == ["tarde@example.com"]
    assert Inscricao.objects.count() == 0


@pytest.mark.django_db
def test_varredura_reenfileira_entrega_cuja_mensagem_se_perdeu(
    tenant: Tenant, local: None, receptor: Receptor
) -> None:
    webhook(tenant, receptor.url)
    job_id = submeter(tenant)
    concluir(job_id)
    OrmQ.objects.all().delete()
    uma_hora = timezone.now() - timedelta(hours=1)
    Entrega.objects.update(proxima_em=uma_hora, enfileirada_em=uma_hora)

    primeira = saida.varrer()
    segunda = saida.varrer()

    assert (primeira.reenfileiradas, segunda.reenfileiradas) == (1, 0)
    assert mensagens_de_entrega() == list(Entrega.objects.values_list("id", flat=True))


# --- Alerts -----------------------------------------------------------------------


def alerta(tenant: Tenant) -> Alerta:
    agora = timezone.now()
    agendamento = Agendamento.objects.create(
        tenant=tenant,
        nome="Vendas de ontem",
        tipo="vendas",
        periodo="ontem",
        cron="0 6 * * *",
        prazo=timedelta(hours=1),
        destinatarios=["gerente@example.com"],
    )
    ocorrencia = Ocorrencia.objects.create(
        agendamento=agendamento,
        tenant=tenant,
        planejado_para=agora - timedelta(hours=2),
        prazo_em=agora - timedelta(hours=1),
        estado=EstadoOcorrencia.NAO_DISPARADA,
    )
    return Alerta.objects.create(
        ocorrencia=ocorrencia, tenant=tenant, motivo="nenhum cluster disparou"
    )


@pytest.mark.django_db
def test_enfileirar_alerta_duas_vezes_cria_as_entregas_uma_vez(
    tenant: Tenant, local: None, receptor: Receptor, settings: Any
) -> None:
    settings.RELATORIOS_EMAILS_SUPORTE = ["suporte@example.com"]
    webhook(tenant, receptor.url, ["alerta.aberto", "alerta.fechado"])
    webhook(tenant, receptor.url, ["job.pronto"])
    aberto = alerta(tenant)

    with transaction.atomic():
        primeira = saida.enfileirar_alerta(alerta_id=aberto.pk, evento="alerta.aberto")
    with transaction.atomic():
        segunda = saida.enfileirar_alerta(alerta_id=aberto.pk, evento="alerta.aberto")
    fechado = saida.enfileirar_alerta(alerta_id=aberto.pk, evento="alerta.fechado")

    assert (primeira, segunda, fechado) == (3, 0, 1)
    # One message per address: the tenant's recipient never sees support's.
    emails = Entrega.objects.filter(canal="email").order_by("id")
    assert [e.destinatarios for e in emails] == [
        ["gerente@example.com"],
        ["suporte@example.com"],
    ]
    assert emails[0].payload["data"]["agendamento"]["nome"] == "Vendas de ontem"
    assert emails[0].payload["data"]["motivo"] == "nenhum cluster disparou"
    assert set(Entrega.objects.values_list("evento", "canal")) == {
        ("alerta.aberto", "email"),
        ("alerta.aberto", "webhook"),
        ("alerta.fechado", "webhook"),
    }
    # The tenant's slots (one): a message for the first, the rest wait.
    assert len(mensagens_de_entrega()) == settings.RELATORIOS_MAX_ENTREGAS_POR_TENANT
    helpers.entregar_em_voo()
    assert [m.to for m in mail.outbox] == [
        ["gerente@example.com"],
        ["suporte@example.com"],
    ]
    assert mail.outbox[0].subject.startswith("Alerta: o relatório agendado Vendas")


# --- SSRF -------------------------------------------------------------------------


@pytest.mark.django_db
def test_em_producao_endereco_privado_e_recusado_no_cadastro_e_na_entrega(
    tenant: Tenant, receptor: Receptor, settings: Any
) -> None:
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = False
    https_local = receptor.url.replace("http://", "https://")
    for url in (receptor.url, https_local, "https://10.1.2.3/x", "https://[::1]/x"):
        with pytest.raises(ErroDeParametro) as recusa:
            webhook(tenant, url)
        assert recusa.value.campo == "url"
    # A row written behind the service's back (or a DNS answer that changed).
    gancho = Webhook.objects.create(
        tenant=tenant,
        url=https_local,
        segredo=webhooks.novo_segredo(),
        eventos=["job.pronto"],
    )
    job_id = submeter(tenant)
    concluir(job_id)
    [entrega_id] = Entrega.objects.filter(webhook=gancho).values_list("id", flat=True)

    estado = entrega.entregar(entrega_id=entrega_id)

    assert estado == EstadoEntrega.PENDENTE
    assert "destino recusado" in linha_da_entrega(entrega_id).ultimo_erro
    assert receptor.recebidas == []


@pytest.mark.parametrize(
    ("endereco", "publico"),
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fd00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:8.8.8.8", True),
        # 6to4 (2002::/16) carries an IPv4 address in bits 16-48: 127.0.0.1,
        # 169.254.169.254 and 10.0.0.1 wrapped; a public one wrapped is public.
        ("2002:7f00:1::1", False),
        ("2002:a9fe:a9fe::1", False),
        ("2002:a00:1::1", False),
        ("2002:808:808::1", True),
        # Teredo (2001::/32): server and (inverted) client addresses inside.
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),
        ("2001:0:808:808:0:0:f7f7:f7f7", False),
        # NAT64: the well-known prefix maps to the IPv4 address in the last 32
        # bits; the local-use prefix is never public.
        ("64:ff9b::7f00:1", False),
        ("64:ff9b::a9fe:a9fe", False),
        ("64:ff9b::808:808", True),
        ("64:ff9b:1::808:808", False),
        ("fc00::1", False),
        ("ff02::1", False),
        ("::", False),
    ],
)
def test_so_enderecos_publicos_sao_aceitos(endereco: str, publico: bool) -> None:
    assert destinos.publico(endereco, local=False) is publico


@pytest.mark.parametrize(
    ("url", "motivo"),
    [
        ("https://usuario:senha@8.8.8.8/", "usuário"),
        ("https://usuario@8.8.8.8/", "usuário"),
        ("https://8.8.8.8:6379/", "porta"),
        ("https://8.8.8.8:0/", "porta"),
        ("https://8.8.8.8:8443/", "porta"),
        ("https://[2002:7f00:1::1]/", "não público"),
        ("https://[2002:a9fe:a9fe::1]/", "não público"),
        ("https://[64:ff9b::7f00:1]/", "não público"),
    ],
)
def test_urls_recusadas_nomeiam_o_motivo(url: str, motivo: str, settings: Any) -> None:
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = False
    with pytest.raises(ErroDeParametro) as recusa:
        webhooks.validar_url(url)
    assert recusa.value.campo == "url"
    assert motivo in str(recusa.value)


def test_portas_permitidas_vem_da_configuracao(settings: Any) -> None:
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = False
    settings.RELATORIOS_WEBHOOK_PORTAS = [443, 8443]
    _, porta, endereco = destinos.destino("https://8.8.8.8:8443/")
    assert (porta, endereco) == (8443, "8.8.8.8")
    assert destinos.destino("https://8.8.8.8/")[1] == 443


# --- API and page -----------------------------------------------------------------


def post(cliente: Client, caminho: str, corpo: Any) -> Any:
    return cliente.post(
        caminho, data=json.dumps(corpo), content_type="application/json"
    )


@pytest.mark.django_db
def test_api_cria_lista_le_e_remove_webhook(
    token: str, local: None, receptor: Receptor
) -> None:
    cliente = helpers.cliente_com_token(token)

    criado = post(
        cliente,
        "/relatorios/webhooks",
        {"url": receptor.url, "eventos": ["job.pronto"]},
    )
    lista = cliente.get("/relatorios/webhooks/")
    lido = cliente.get(f"/relatorios/webhooks/{criado.json()['id']}")
    removido = cliente.delete(f"/relatorios/webhooks/{criado.json()['id']}")
    de_novo = cliente.delete(f"/relatorios/webhooks/{criado.json()['id']}")

    assert criado.status_code == 201
    assert criado.json()["segredo"].startswith("whsec_")
    assert len(webhooks.novo_segredo()) >= len("whsec_") + 32
    assert [w["url"] for w in lista.json()] == [receptor.url]
    assert "segredo" not in lista.json()[0]
    assert "segredo" not in lido.json()
    assert (removido.status_code, de_novo.status_code) == (204, 404)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("corpo", "campo"),
    [
        ({"eventos": ["job.pronto"]}, "url"),
        ({"url": "não é url", "eventos": ["job.pronto"]}, "url"),
        ({"url": "ftp://127.0.0.1/", "eventos": ["job.pronto"]}, "url"),
        ({"url": "http://127.0.0.1/"}, "eventos"),
        ({"url": "http://127.0.0.1/", "eventos": []}, "eventos"),
        ({"url": "http://127.0.0.1/", "eventos": ["job.sumiu"]}, "eventos"),
        ({"url": "http://127.0.0.1/", "eventos": ["job.pronto"] * 5}, "eventos"),
        ({"url": "http://127.0.0.1/" + "a" * 2000, "eventos": ["job.pronto"]}, "url"),
        ({"url": "http://127.0.0.1/", "eventos": ["job.pronto"], "x": 1}, "x"),
    ],
)
def test_api_400_nomeia_o_campo(
    token: str, local: None, corpo: dict[str, Any], campo: str
) -> None:
    resposta = post(helpers.cliente_com_token(token), "/relatorios/webhooks", corpo)

    assert resposta.status_code == 400
    assert resposta.json()["campo"] == campo
    assert Webhook.objects.count() == 0


@pytest.mark.django_db  # the email reads the schedule's cron (none here)
def test_nome_com_quebra_de_linha_gravado_antes_da_regra_nao_quebra_o_email() -> None:
    payload = {
        "type": "alerta.aberto",
        "data": {
            "agendamento": {"id": 7, "nome": "Vendas\nBcc: todos@rede.com"},
            "tipo": "vendas",
            "planejado_para": "2026-03-01T06:00:00.000000Z",
            "prazo_em": "2026-03-01T09:00:00.000000Z",
            "motivo": "nenhum cluster disparou",
            "fuso_horario": "America/Sao_Paulo",
        },
    }
    assunto, corpo = mensagem_de_email(payload)
    mensagem = EmailMessage(assunto, corpo, to=["contab@rede.com"]).message()
    assert assunto.startswith("Alerta: o relatório agendado Vendas Bcc: todos@")
    assert mensagem["Bcc"] is None


@pytest.mark.django_db
def test_api_webhook_alem_do_limite_do_tenant_e_409(
    token: str, local: None, settings: Any
) -> None:
    settings.RELATORIOS_MAX_WEBHOOKS_POR_TENANT = 1
    cliente = helpers.cliente_com_token(token)
    corpo = {"url": "http://127.0.0.1:9/ganchos", "eventos": ["job.pronto"]}

    primeiro = post(cliente, "/relatorios/webhooks", corpo)
    segundo = post(cliente, "/relatorios/webhooks", corpo)

    assert (primeiro.status_code, segundo.status_code) == (201, 409)
    assert segundo.json() == {
        "erro": "o limite de 1 webhooks por empresa foi atingido: remova um antes "
        "de registrar outro"
    }
    assert Webhook.objects.count() == 1


@pytest.mark.django_db
def test_pagina_de_webhooks_alem_do_limite_e_409_com_o_motivo(
    tenant: Tenant, local: None, settings: Any
) -> None:
    settings.RELATORIOS_MAX_WEBHOOKS_POR_TENANT = 1
    cliente = Client()
    cliente.force_login(helpers.criar_usuario(tenant)[0])
    corpo = {"url": "http://127.0.0.1:9/ganchos", "eventos": ["job.pronto"]}

    primeiro = cliente.post("/painel/webhooks/", corpo)
    segundo = cliente.post("/painel/webhooks/", corpo)

    assert (primeiro.status_code, segundo.status_code) == (200, 409)
    assert "o limite de 1 webhooks por empresa" in segundo.content.decode()
    assert Webhook.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("valor", ["sim", 1, None])
def test_notificar_email_que_nao_e_booleano_e_400(tenant: Tenant, valor: Any) -> None:
    token = helpers.criar_usuario(tenant, email="ana@example.com")[1]

    resposta = post(
        helpers.cliente_com_token(token),
        "/relatorios/vendas",
        {**PEDIDO, "notificar_email": valor},
    )

    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "notificar_email"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("email", "dominios", "trecho"),
    [
        ("", [], "não tem um e-mail cadastrado"),
        ("postmaster@localhost", [], "ponto"),
        ("ana@[10.0.0.5]", [], "IP"),
        ("ana@gmail.com", ["rede-a.com.br"], "rede-a.com.br"),
    ],
    ids=["sem-email", "sem-ponto", "ip-literal", "fora-dos-dominios"],
)
def test_notificar_email_sem_email_ou_com_email_recusado_e_400_sem_inscricao(
    tenant: Tenant, email: str, dominios: list[str], trecho: str
) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(dominios_email=dominios)
    token = helpers.criar_usuario(tenant, email=email)[1]

    resposta = post(
        helpers.cliente_com_token(token),
        "/relatorios/vendas",
        {**PEDIDO, "notificar_email": True},
    )

    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "notificar_email"
    assert trecho in resposta.json()["erro"]
    assert Inscricao.objects.count() == 0
    assert not RelatorioJob.objects.exists()


@pytest.mark.django_db
def test_notificar_email_pela_pagina_com_email_recusado_mostra_o_erro(
    tenant: Tenant,
) -> None:
    gerente = helpers.criar_usuario(tenant, email="postmaster@localhost")[0]
    cliente = Client()
    cliente.force_login(gerente)

    resposta = cliente.post("/painel/relatorios/vendas/", PEDIDO_DO_PAINEL)

    assert resposta.status_code == 400
    assert "não pode receber avisos" in resposta.content.decode()
    assert not RelatorioJob.objects.exists()


@pytest.mark.django_db
def test_webhook_de_outro_tenant_e_404(
    token: str, outro_tenant: Tenant, local: None, receptor: Receptor
) -> None:
    alheio = webhook(outro_tenant, receptor.url)
    cliente = helpers.cliente_com_token(token)

    lido = cliente.get(f"/relatorios/webhooks/{alheio.pk}")
    removido = cliente.delete(f"/relatorios/webhooks/{alheio.pk}")
    enorme = cliente.get(f"/relatorios/webhooks/{10**19}")

    assert (lido.status_code, removido.status_code, enorme.status_code) == (404,) * 3
    assert lido.json() == {"erro": "não encontrado"}
    assert cliente.get("/relatorios/webhooks").json() == []
    assert Webhook.objects.filter(pk=alheio.pk).exists()


@pytest.mark.django_db
def test_pagina_de_webhooks_mostra_o_segredo_so_uma_vez(
    tenant: Tenant, outro_tenant: Tenant, local: None, receptor: Receptor
) -> None:
    cliente = Client(enforce_csrf_checks=False)
    cliente.force_login(helpers.criar_usuario(tenant)[0])
    alheio = webhook(outro_tenant, receptor.url)

    criado = cliente.post(
        "/painel/webhooks/", {"url": receptor.url, "eventos": ["job.pronto"]}
    )
    gancho = Webhook.objects.get(tenant=tenant)
    lista = cliente.get("/painel/webhooks/")
    invalido = cliente.post(
        "/painel/webhooks/", {"url": "ftp://x", "eventos": ["job.pronto"]}
    )
    alheio_removido = cliente.post(f"/painel/webhooks/{alheio.pk}/remover/")
    removido = cliente.post(f"/painel/webhooks/{gancho.pk}/remover/")

    assert criado.status_code == 200
    assert gancho.segredo in criado.content.decode()
    assert lista.status_code == 200
    assert receptor.url in lista.content.decode()
    assert gancho.segredo not in lista.content.decode()
    assert invalido.status_code == 400
    assert alheio_removido.status_code == 404
    assert removido.status_code == 302
    assert list(Webhook.objects.values_list("pk", flat=True)) == [alheio.pk]


@pytest.mark.django_db
def test_checkbox_do_painel_inscreve_o_gerente(tenant: Tenant) -> None:
    gerente: Usuario = helpers.criar_usuario(tenant, email="ana@example.com")[0]
    cliente = Client()
    cliente.force_login(gerente)

    resposta = cliente.post("/painel/relatorios/vendas/", PEDIDO_DO_PAINEL)

    assert resposta.status_code == 302
    [inscricao] = Inscricao.objects.all()
    assert inscricao.email == "ana@example.com"
    assert "notificar_email" not in inscricao.job.params


@pytest.mark.django_db
def test_admin_cria_webhook_mostra_o_segredo_uma_vez_e_reenvia_entrega(
    tenant: Tenant, local: None, receptor: Receptor
) -> None:
    cliente = Client()
    cliente.force_login(
        Usuario.objects.create_superuser("raiz", "", "senha-de-teste-123")
    )

    criado = cliente.post(
        "/admin/relatorios/webhook/add/",
        {
            "tenant": tenant.pk,
            "url": receptor.url,
            "eventos": ["job.falhou"],
            "ativo": "on",
        },
        follow=True,
    )
    gancho = Webhook.objects.get()
    pagina = cliente.get(f"/admin/relatorios/webhook/{gancho.pk}/change/")
    desativado = cliente.post(
        f"/admin/relatorios/webhook/{gancho.pk}/change/",
        {"eventos": ["job.falhou", "job.pronto"]},
    )
    assert desativado.status_code == 302
    assert Webhook.objects.filter(pk=gancho.pk, ativo=False).exists()
    Webhook.objects.filter(pk=gancho.pk).update(ativo=True)
    job_id = submeter(tenant)
    suporte.marcar_como_falhou(job_id=job_id, motivo="teste")
    [falha] = Entrega.objects.all()
    Entrega.objects.filter(pk=falha.pk).update(estado=EstadoEntrega.FALHOU)
    lista = cliente.get("/admin/relatorios/entrega/?estado=falhou")
    reenvio = cliente.post(
        "/admin/relatorios/entrega/",
        {"action": "reenviar", "_selected_action": [falha.pk]},
    )

    assert gancho.segredo.startswith("whsec_")
    assert gancho.segredo in criado.content.decode()
    assert gancho.segredo not in pagina.content.decode()
    assert lista.status_code == 200
    assert reenvio.status_code == 302
    assert linha_da_entrega(falha.pk).estado == EstadoEntrega.PENDENTE


@pytest.mark.django_db
def test_suporte_ve_entregas_e_reenvia_mas_nao_ve_o_segredo(tenant: Tenant) -> None:
    from relatorios.models import permissoes

    atendente = Usuario.objects.create_user("atendente", is_staff=True)
    atendente.groups.add(permissoes.criar_grupo_suporte())
    cliente = Client()
    cliente.force_login(atendente)
    job_id = submeter(tenant)
    gancho = Webhook.objects.create(
        tenant=tenant,
        url="https://ganchos.example.com/relatorios",
        segredo="whsec_c2VncmVkby1kZS10ZXN0ZS0xMjM0NTY3ODkw",
        eventos=["job.falhou"],
    )
    suporte.marcar_como_falhou(job_id=job_id, motivo="teste")
    [falha] = Entrega.objects.all()
    Entrega.objects.filter(pk=falha.pk).update(estado=EstadoEntrega.FALHOU)

    lista = cliente.get("/admin/relatorios/entrega/?estado=falhou")
    pagina = cliente.get(f"/admin/relatorios/webhook/{gancho.pk}/change/")
    reenvio = cliente.post(
        "/admin/relatorios/entrega/",
        {"action": "reenviar", "_selected_action": [falha.pk]},
    )

    assert lista.status_code == 200
    assert pagina.status_code == 200
    assert gancho.segredo not in pagina.content.decode()
    assert reenvio.status_code == 302
    assert linha_da_entrega(falha.pk).estado == EstadoEntrega.PENDENTE
    assert cliente.get("/admin/relatorios/webhook/add/").status_code == 403
