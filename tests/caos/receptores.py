"""The soak's receivers: a real SMTP server and a webhook endpoint, both of
which the fault injector can take away for a while and bring back on the
same port, and the webhook one answering 500 to a share of the requests."""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import standardwebhooks

from tests import processos


@dataclass(frozen=True)
class Email:
    """One SMTP transaction as the server accepted it."""

    em: float
    destinatarios: tuple[str, ...]
    assunto: str
    message_id: str = ""


class CaixaIntermitente:
    """A real SMTP server (aiosmtpd, as the tests' `smtp` fixture) that can go
    away: `sair` stops it (open sessions are cut), `voltar` listens again on
    the same port. Records each transaction it accepted."""

    def __init__(self) -> None:
        self.emails: list[Email] = []
        self.porta = processos.porta_livre()
        self.fora = False
        self._trava = threading.Lock()
        caixa = self

        class Registrador:
            async def handle_DATA(
                self, server: Any, session: Any, envelope: Any
            ) -> str:
                mensagem = message_from_bytes(envelope.content, policy=policy.default)
                caixa.emails.append(
                    Email(
                        em=time.time(),
                        destinatarios=tuple(d.lower() for d in envelope.rcpt_tos),
                        assunto=str(mensagem["Subject"] or ""),
                        message_id=str(mensagem["Message-ID"] or "").strip(),
                    )
                )
                return "250 OK"

        self._registrador = Registrador()
        self._ouvir()

    def ambiente(self) -> dict[str, str]:
        """The settings that point Django's SMTP backend here."""
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(self.porta),
        }

    def _ouvir(self) -> None:
        from aiosmtpd.controller import Controller

        self.controlador = Controller(
            self._registrador, hostname="127.0.0.1", port=self.porta
        )
        self.controlador.start()

    def sair(self) -> None:
        with self._trava:
            if not self.fora:
                self.controlador.stop()
                self.fora = True

    def voltar(self) -> None:
        with self._trava:
            if self.fora:
                self._ouvir()
                self.fora = False

    def parar(self) -> None:
        self.sair()


@dataclass(frozen=True)
class Pedido:
    """One POST the webhook endpoint received, and what it answered."""

    em: float
    caminho: str
    webhook_id: str
    tipo: str
    # What the event is about, from its verified payload (see `identidade`).
    assunto: str
    status: int
    assinatura_valida: bool
    payload: dict[str, Any]
    erro: str = ""
    cortado: bool = False


def identidade(payload: dict[str, Any]) -> str:
    """The event a webhook request reports, independent of its delivery id:
    what two deliveries of one event would share."""
    tipo, dados = payload.get("type", "?"), payload.get("data") or {}
    if tipo in ("job.pronto", "job.falhou"):
        return f"{tipo}:{dados.get('id')}:{dados.get('concluido_em')}"
    if tipo in ("alerta.aberto", "alerta.fechado"):
        return f"{tipo}:{dados.get('id')}"
    if tipo == "agendamento.entregue":
        return f"{tipo}:{(dados.get('ocorrencia') or {}).get('id')}"
    return f"{tipo}:?"


@dataclass(frozen=True)
class MensagemDeChat:
    """One POST to the Slack-shaped endpoint: a chat's incoming webhook has
    no signature and no message id; what it says is all there is."""

    em: float
    caminho: str
    corpo: dict[str, Any]
    status: int
    cortado: bool = False

    def links(self) -> list[str]:
        """The buttons' URLs (a scheduled report's download link: unique
        per delivery, since each names its destination)."""
        return [
            str(elemento.get("url", ""))
            for bloco in self.corpo.get("blocks") or []
            if bloco.get("type") == "actions"
            for elemento in bloco.get("elements") or []
        ]


class ReceptorDeWebhooks:
    """A real HTTP endpoint, one path per tenant (`/ganchos/<tenant id>`).

    Every request is verified with the tenant's secret (the Standard Webhooks
    library, as a tenant's receiver would) and recorded; a share
    `taxa_de_500` of them is answered 500 (seeded), the rest 204.
    """

    def __init__(self, *, taxa_de_500: float, semente: int) -> None:
        self.pedidos: list[Pedido] = []
        # The Slack-shaped endpoint (`/chat/<tenant id>`), on the same server:
        # it goes away with the webhooks and answers 500 as often.
        self.chats: list[MensagemDeChat] = []
        self.segredos: dict[str, str] = {}
        self.taxa_de_500 = taxa_de_500
        self._sorte = random.Random(semente)
        self._trava = threading.Lock()
        self.fora = False
        self._servidor: ThreadingHTTPServer | None = None
        self._fio: threading.Thread | None = None
        self.porta = 0
        self._ouvir()

    def url(self, tenant_id: int) -> str:
        return f"http://127.0.0.1:{self.porta}/ganchos/{tenant_id}"

    def url_do_chat(self, tenant_id: int) -> str:
        return f"http://127.0.0.1:{self.porta}/chat/{tenant_id}"

    def _tratador(self) -> type[BaseHTTPRequestHandler]:
        receptor = self

        class Tratador(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                tamanho = int(self.headers.get("Content-Length", 0))
                corpo = self.rfile.read(tamanho)
                if self.path.startswith("/chat/"):
                    self._chat(corpo, tamanho)
                    return
                segredo = receptor.segredos.get(self.path, "")
                cabecalhos = dict(self.headers)
                erro = ""
                try:
                    payload = standardwebhooks.Webhook(segredo).verify(
                        corpo, cabecalhos
                    )
                    valida = True
                except Exception as falha:
                    payload, valida = {}, False
                    erro = (
                        f"{type(falha).__name__}: {falha}; {len(corpo)} bytes de"
                        f" {self.headers.get('Content-Length')}"
                    )
                with receptor._trava:
                    falhar = receptor._sorte.random() < receptor.taxa_de_500
                status = 500 if falhar or not valida else 204
                receptor.pedidos.append(
                    Pedido(
                        em=time.time(),
                        caminho=self.path,
                        webhook_id=self.headers.get("webhook-id", ""),
                        tipo=str(payload.get("type", "")),
                        assunto=identidade(payload) if valida else "",
                        status=status,
                        assinatura_valida=valida,
                        payload=payload if valida else {},
                        erro=erro,
                        # A sender killed in the middle of its POST.
                        cortado=len(corpo) < tamanho,
                    )
                )
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _chat(self, corpo: bytes, tamanho: int) -> None:
                try:
                    mensagem = json.loads(corpo)
                except ValueError:
                    mensagem = {}
                with receptor._trava:
                    falhar = receptor._sorte.random() < receptor.taxa_de_500
                # Slack answers 200 "ok"; a message it could not read, 400.
                status = 500 if falhar else (200 if mensagem else 400)
                receptor.chats.append(
                    MensagemDeChat(
                        em=time.time(),
                        caminho=self.path,
                        corpo=mensagem if isinstance(mensagem, dict) else {},
                        status=status,
                        cortado=len(corpo) < tamanho,
                    )
                )
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        return Tratador

    def _ouvir(self) -> None:
        servidor = ThreadingHTTPServer(("127.0.0.1", self.porta), self._tratador())
        servidor.daemon_threads = True
        self.porta = servidor.server_address[1]
        self._servidor = servidor
        self._fio = threading.Thread(target=servidor.serve_forever, daemon=True)
        self._fio.start()

    def sair(self) -> None:
        with self._trava:
            servidor, self._servidor = self._servidor, None
            self.fora = True
        if servidor is not None:
            servidor.shutdown()
            servidor.server_close()

    def voltar(self) -> None:
        with self._trava:
            if not self.fora:
                return
            self.fora = False
        self._ouvir()

    def parar(self) -> None:
        self.sair()
