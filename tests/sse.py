"""A Server-Sent Events client for the tests: real HTTP (httpx), read in a thread."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class EventoRecebido:
    id: str | None
    tipo: str
    dados: Any


@dataclass
class Fluxo:
    """One open stream, read by a thread until it ends or `fechar()`."""

    url: str
    cabecalhos: dict[str, str]
    status: int | None = None
    resposta_cabecalhos: dict[str, str] = field(default_factory=dict)
    eventos: list[EventoRecebido] = field(default_factory=list)
    comentarios: int = 0
    retry: int | None = None
    ultimo_id: str | None = None
    terminou: bool = False
    corpo_de_erro: Any = None
    _aberto: threading.Event = field(default_factory=threading.Event)
    _parar: bool = False
    _resposta: httpx.Response | None = None

    def abrir(self, timeout: float = 30) -> Fluxo:
        threading.Thread(target=self._ler, daemon=True).start()
        if not self._aberto.wait(timeout):
            raise AssertionError(f"o fluxo {self.url} não respondeu")
        return self

    def _ler(self) -> None:
        try:
            with httpx.stream(
                "GET",
                self.url,
                headers={"Accept": "text/event-stream", **self.cabecalhos},
                timeout=httpx.Timeout(10, read=None),
            ) as resposta:
                self._resposta = resposta
                self.status = resposta.status_code
                self.resposta_cabecalhos = dict(resposta.headers)
                if resposta.status_code != 200:
                    texto = resposta.read()
                    self.corpo_de_erro = json.loads(texto) if texto else None
                    self._aberto.set()
                    return
                self._aberto.set()
                self._interpretar(resposta)
        except (httpx.HTTPError, OSError, RuntimeError):
            pass  # hung up by fechar(), or by the server
        finally:
            self.terminou = True
            self._aberto.set()

    def _interpretar(self, resposta: httpx.Response) -> None:
        # The stream format (WHATWG's): fields until a blank line.
        campos: dict[str, str] = {}
        dados: list[str] = []
        for linha in resposta.iter_lines():
            if self._parar:
                return
            if linha == "":
                if "id" in campos:
                    self.ultimo_id = campos["id"]
                if dados:
                    texto = "\n".join(dados)
                    self.eventos.append(
                        EventoRecebido(
                            id=campos.get("id"),
                            tipo=campos.get("event", "message"),
                            dados=json.loads(texto),
                        )
                    )
                campos, dados = {}, []
            elif linha.startswith(":"):
                self.comentarios += 1
            else:
                nome, _, valor = linha.partition(":")
                valor = valor[1:] if valor.startswith(" ") else valor
                if nome == "data":
                    dados.append(valor)
                elif nome == "retry":
                    self.retry = int(valor)
                else:
                    campos[nome] = valor

    def fechar(self) -> None:
        """Hang up, as a client that goes away does."""
        self._parar = True
        if self._resposta is not None:
            with contextlib.suppress(Exception):
                self._resposta.close()
        limite = time.monotonic() + 10
        while not self.terminou and time.monotonic() < limite:
            time.sleep(0.02)

    def esperar(
        self, condicao: Any, *, timeout: float = 60, descricao: str = ""
    ) -> None:
        limite = time.monotonic() + timeout
        while not condicao(self):
            if time.monotonic() > limite:
                raise AssertionError(
                    f"esperei {timeout}s por {descricao or 'o fluxo'}: "
                    f"{[(e.id, e.tipo, e.dados) for e in self.eventos]}"
                )
            time.sleep(0.05)


def abrir(url: str, *, token: str | None = None, ultimo: str | None = None) -> Fluxo:
    cabecalhos = {}
    if token is not None:
        cabecalhos["Authorization"] = f"Token {token}"
    if ultimo is not None:
        cabecalhos["Last-Event-ID"] = ultimo
    return Fluxo(url=url, cabecalhos=cabecalhos).abrir()
