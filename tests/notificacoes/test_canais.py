"""The channels' registry and the chat channels (Slack, Teams, Google Chat),
delivered to a local HTTPS receiver that checks each service's documented
payload shape."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client import REGISTRY

from relatorios.agendamentos import alertas, disparo
from relatorios.models import (
    Entrega,
    EstadoDoJob,
    EstadoEntrega,
    Evento,
    Ocorrencia,
    RelatorioJob,
    Tenant,
    Webhook,
)
from relatorios.notificacoes import canais, webhooks
from relatorios.operacao import metricas
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers

RAIZ_DOS_CANAIS = Path(canais.__file__).parent


# --- What each service documents as its incoming webhook's body ---------------


def forma_slack(corpo: dict[str, Any]) -> list[str]:
    """api.slack.com/messaging/webhooks and the Block Kit reference."""
    erros = []
    if not isinstance(corpo.get("text"), str) or not corpo["text"]:
        erros.append("text: a non-empty string (the notification's fallback)")
    for bloco in corpo.get("blocks", []):
        tipo = bloco.get("type")
        if tipo == "header" and bloco["text"]["type"] != "plain_text":
            erros.append("header: plain_text only")
        elif tipo == "section" and not 0 < len(bloco["fields"]) <= 10:
            erros.append("section: 1 to 10 fields")
        elif tipo == "actions" and not all(
            e["type"] == "button" and e["url"].startswith("http")
            for e in bloco["elements"]
        ):
            erros.append("actions: buttons with a url")
        elif tipo not in ("header", "section", "actions"):
            erros.append(f"unexpected block {tipo}")
    return erros


def forma_teams(corpo: dict[str, Any]) -> list[str]:
    """Teams' "post to a channel when a webhook request is received": a
    message with one Adaptive Card attachment (adaptivecards.io schema)."""
    erros = []
    if corpo.get("type") != "message":
        erros.append("type: message")
    [anexo] = corpo.get("attachments") or [{}]
    if anexo.get("contentType") != "application/vnd.microsoft.card.adaptive":
        erros.append("attachments[0].contentType: an adaptive card")
    cartao = anexo.get("content") or {}
    if cartao.get("type") != "AdaptiveCard" or not cartao.get("version"):
        erros.append("content: an AdaptiveCard with its version")
    if not any(b.get("type") == "TextBlock" for b in cartao.get("body", [])):
        erros.append("body: a TextBlock")
    for acao in cartao.get("actions", []):
        if acao.get("type") != "Action.OpenUrl" or not acao.get("url"):
            erros.append("actions: Action.OpenUrl with a url")
    return erros


def forma_google_chat(corpo: dict[str, Any]) -> list[str]:
    """developers.google.com/workspace/chat: a Message with text and cardsV2."""
    erros = []
    if not isinstance(corpo.get("text"), str):
        erros.append("text: a string")
    for cartao in corpo.get("cardsV2", []):
        if not cartao.get("cardId") or not cartao.get("card", {}).get("header"):
            erros.append("cardsV2: cardId and a card with a header")
        for secao in cartao["card"].get("sections", []):
            for widget in secao["widgets"]:
                if not {"decoratedText", "buttonList"} & set(widget):
                    erros.append(f"widget: {set(widget)}")
    return erros


FORMAS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "slack": forma_slack,
    "teams": forma_teams,
    "google_chat": forma_google_chat,
}


def texto_de(canal: str, corpo: dict[str, Any]) -> str:
    """All the words of the message."""
    return json.dumps(corpo, ensure_ascii=False)


MARKUP = {"slack": "<", "google_chat": "<", "teams": "[x]("}


def interpretado(canal: str, corpo: dict[str, Any]) -> list[str]:
    """The strings the service reads as markup (mentions, links): Slack's
    `text` and mrkdwn fields (a header is plain_text), every text of a Teams
    card (a Markdown subset), Google Chat's `text` (its card is HTML-escaped)."""
    if canal == "slack":
        campos = [
            f["text"] for b in corpo["blocks"] if b["type"] == "section"
            for f in b["fields"]
        ]  # fmt: skip
        return [corpo["text"], *campos]
    if canal == "teams":
        cartao = corpo["attachments"][0]["content"]
        textos = [b["text"] for b in cartao["body"] if b["type"] == "TextBlock"]
        fatos = [f["value"] for b in cartao["body"] if b["type"] == "FactSet"
                 for f in b["facts"]]  # fmt: skip
        return textos + fatos
    return [corpo["text"]]


# --- A local HTTPS receiver ---------------------------------------------------


@pytest.fixture(scope="session")
def certificado(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl, as a CA would)."""
    pasta = tmp_path_factory.mktemp("tls")
    chave, cert = pasta / "chave.pem", pasta / "cert.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
            "-keyout", str(chave), "-out", str(cert), "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return chave, cert


class ReceptorTls:
    """An HTTPS server on 127.0.0.1 that records every POST's JSON body."""

    def __init__(self, chave: Path, cert: Path) -> None:
        self.recebidos: list[tuple[str, dict[str, Any]]] = []
        receptor = self

        class Tratador(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                corpo = self.rfile.read(int(self.headers["Content-Length"]))
                receptor.recebidos.append((self.path, json.loads(corpo)))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.servidor = ThreadingHTTPServer(("127.0.0.1", 0), Tratador)
        contexto = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        contexto.load_cert_chain(cert, chave)
        self.servidor.socket = contexto.wrap_socket(
            self.servidor.socket, server_side=True
        )
        self.url = f"https://127.0.0.1:{self.servidor.server_address[1]}"
        threading.Thread(target=self.servidor.serve_forever, daemon=True).start()


@pytest.fixture
def receptor(certificado: tuple[Path, Path], settings: Any) -> Iterator[ReceptorTls]:
    chave, cert = certificado
    # Development mode admits loopback; the certificate is checked as any.
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = True
    settings.RELATORIOS_WEBHOOK_CA_ARQUIVO = str(cert)
    # A chat opens links, not paths.
    settings.RELATORIOS_URL_BASE = "https://relatorios.example.com"
    receptor = ReceptorTls(chave, cert)
    yield receptor
    receptor.servidor.shutdown()
    receptor.servidor.server_close()


def integrar(tenant: Tenant, canal: str, url: str, eventos: list[str]) -> Webhook:
    return webhooks.registrar_webhook(
        tenant_id=tenant.pk, canal=canal, url=url, eventos=eventos, usuario_id=None
    )


# --- The registry ---------------------------------------------------------------


def test_cada_canal_e_uma_pasta_com_seu_transporte_e_uma_linha_no_registro() -> None:
    pastas = {
        p.name for p in RAIZ_DOS_CANAIS.iterdir() if (p / "transporte.py").exists()
    }
    assert pastas == set(canais.TRANSPORTES)
    assert {t.canal for t in canais.por_url()} == pastas - {"email"}


# --- Chats ----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("canal", ["slack", "teams", "google_chat"])
def test_o_chat_recebe_o_relatorio_agendado_com_link_e_sem_arquivo(
    tenant: Tenant, receptor: ReceptorTls, canal: str
) -> None:
    integracao = integrar(tenant, canal, f"{receptor.url}/{canal}", ["job.pronto"])
    helpers.criar_lojas(tenant, "L001")
    agendamento = helpers.criar_agendamento(
        tenant,
        nome="Fechamento <!channel> [x](https://mal.example)",
        destinatarios=[],
        webhooks=[integracao.pk],
    )
    disparo.disparar(agora=agendamento.proximo_disparo)
    ocorrencia = Ocorrencia.objects.get(agendamento=agendamento)
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado={
            "agrupar": "mes",
            "linhas": [],
            "totais": {"vendas": 12, "quantidade": 30, "receita": "1234.50"},
        },
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(days=1),
    )
    alertas.verificar()
    helpers.entregar_em_voo()

    [(caminho, corpo)] = receptor.recebidos
    entrega = Entrega.objects.get(evento=Evento.AGENDAMENTO_ENTREGUE)
    texto = texto_de(canal, corpo)
    link = entrega.payload["data"]["download"]["url"]
    assert caminho == f"/{canal}"
    assert FORMAS[canal](corpo) == []
    assert (entrega.canal, entrega.estado) == (canal, EstadoEntrega.ENTREGUE)
    assert "Fechamento" in texto
    assert "1.234,50" in texto  # the totals, as the page shows them
    assert link in texto
    lidos_como_markup = " ".join(interpretado(canal, corpo))
    assert "Fechamento" in lidos_como_markup
    # Each service's own markup, typed by a tenant, stays text: Slack's and
    # Google Chat's <...> (mentions, links), Teams' Markdown links.
    assert MARKUP[canal] not in lidos_como_markup
    assert Client().get(link[link.index("/baixar/") :]).status_code == 200
    assert "UEsDB" not in texto  # no file: a zip's base64 would start so


@pytest.mark.django_db
@pytest.mark.parametrize("canal", ["slack", "teams", "google_chat"])
def test_nome_do_agendamento_nao_formata_nem_vira_link_no_chat(
    tenant: Tenant, receptor: ReceptorTls, canal: str
) -> None:
    integracao = integrar(tenant, canal, f"{receptor.url}/{canal}", ["job.pronto"])
    helpers.criar_lojas(tenant, "L001")
    agendamento = helpers.criar_agendamento(
        tenant,
        nome="Fechamento *urgente* _hoje_ ~x~ `y` https://mal.example www.mal.example",
        destinatarios=[],
        webhooks=[integracao.pk],
    )
    disparo.disparar(agora=agendamento.proximo_disparo)
    ocorrencia = Ocorrencia.objects.get(agendamento=agendamento)
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado={"agrupar": "mes", "linhas": [], "totais": {}},
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(days=1),
    )
    alertas.verificar()
    helpers.entregar_em_voo()

    [(_, corpo)] = receptor.recebidos
    lidos_como_markup = " ".join(interpretado(canal, corpo))
    assert "Fechamento" in lidos_como_markup
    for markup in ("*urgente*", "_hoje_", "~x~", "`y`", "https://", "mal.example"):
        assert markup not in lidos_como_markup


@pytest.mark.django_db
def test_alerta_vai_ao_chat_assinante(tenant: Tenant, receptor: ReceptorTls) -> None:
    integrar(tenant, "slack", f"{receptor.url}/alertas", ["alerta.aberto"])
    integrar(tenant, "teams", f"{receptor.url}/outros", ["job.pronto"])
    agendamento = helpers.criar_agendamento(
        tenant, nome="Vendas de ontem", prazo=timedelta(minutes=5)
    )
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=1))
    helpers.entregar_em_voo()

    [(caminho, corpo)] = receptor.recebidos
    assert caminho == "/alertas"
    assert forma_slack(corpo) == []
    assert "Vendas de ontem" in corpo["text"]
    assert "não ficou pronto" in corpo["text"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("canal", "url", "host"),
    [
        ("slack", "https://hooks.slack.com.evil.example/x", "hooks.slack.com"),
        ("teams", "https://evil.example/webhookb2/x", "logic.azure.com"),
        ("google_chat", "https://chat.googleapis.evil/v1/x", "chat.googleapis.com"),
    ],
)
def test_url_de_chat_so_nos_hosts_do_servico(
    tenant: Tenant, canal: str, url: str, host: str
) -> None:
    with pytest.raises(ErroDeParametro) as recusa:
        integrar(tenant, canal, url, ["job.pronto"])
    assert recusa.value.campo == "url"
    assert host in recusa.value.mensagem
    assert not Webhook.objects.exists()


@pytest.mark.django_db
def test_a_url_de_um_chat_e_sua_credencial_e_nao_aparece_inteira(
    tenant: Tenant, receptor: ReceptorTls
) -> None:
    secreto = f"{receptor.url}/services/T000/B000/segredo-do-canal"
    integrar(tenant, "slack", secreto, ["job.pronto"])
    _, token = helpers.criar_usuario(tenant)
    api = helpers.cliente_com_token(token)
    gerente = Client()
    gerente.force_login(helpers.criar_usuario(tenant)[0])

    lista = api.get("/relatorios/webhooks").json()
    pagina = gerente.get("/painel/webhooks/").content.decode()

    assert [(w["canal"], w["url"]) for w in lista] == [
        ("slack", "https://127.0.0.1/…anal")
    ]
    assert "segredo-do-canal" not in json.dumps(lista)
    assert "segredo-do-canal" not in pagina
    assert "Slack" in pagina


@pytest.mark.django_db
def test_canal_desconhecido_e_400_que_nomeia_o_campo(tenant: Tenant) -> None:
    _, token = helpers.criar_usuario(tenant)
    resposta = helpers.cliente_com_token(token).post(
        "/relatorios/webhooks",
        {
            "canal": "pombo",
            "url": "https://exemplo.com.br/x",
            "eventos": ["job.pronto"],
        },
        content_type="application/json",
    )
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "canal"
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("canal", sorted(canais.TRANSPORTES))
def test_cada_canal_e_um_rotulo_da_metrica(canal: str) -> None:
    rotulos = {"canal": canal, "estado": "entregue", "assunto": "job"}
    nome = "relatorios_entregas_finalizadas_total"
    antes = REGISTRY.get_sample_value(nome, rotulos) or 0
    metricas.entrega(canal=canal, evento="job.pronto", estado="entregue", ok=True)
    assert REGISTRY.get_sample_value(nome, rotulos) == antes + 1
