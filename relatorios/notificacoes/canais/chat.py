"""What the chat channels share: an incoming webhook gets the event as a message."""

from __future__ import annotations

from typing import Any, ClassVar

from relatorios.notificacoes.canais.base import Envio, ResultadoDoEnvio, Transporte
from relatorios.notificacoes.canais.http import postar
from relatorios.notificacoes.email import Resumo, resumo_do_evento


class Chat(Transporte):
    """A chat's incoming webhook: its URL is its credential; the event is told
    in a few lines (`email.resumo_do_evento`) in the service's own message
    format (`mensagem`), never with the file."""

    url_secreta = True
    cabecalhos: ClassVar[dict[str, str]] = {}

    def enviar(self, envio: Envio) -> ResultadoDoEnvio:
        if envio.url is None:
            return ResultadoDoEnvio(ok=False, erro="integração removida ou desativada")
        corpo = self.mensagem(resumo_do_evento(envio.payload), envio)
        return postar(envio.url, corpo, cabecalhos=self.cabecalhos)

    def mensagem(self, resumo: Resumo, envio: Envio) -> dict[str, Any]:
        raise NotImplementedError
