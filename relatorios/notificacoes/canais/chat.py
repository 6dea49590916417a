"""What the chat channels share: an incoming webhook gets the event as a message."""

from __future__ import annotations

import re
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
        resumo = resumo_do_evento(envio.payload)
        inerte = Resumo(
            texto_inerte(resumo.titulo),
            [(rotulo, texto_inerte(valor)) for rotulo, valor in resumo.campos],
            resumo.link,
        )
        corpo = self.mensagem(inerte, envio)
        return postar(envio.url, corpo, cabecalhos=self.cabecalhos)

    def mensagem(self, resumo: Resumo, envio: Envio) -> dict[str, Any]:
        raise NotImplementedError


# Every chat reads some Markdown in a message's text (Slack's mrkdwn, Teams'
# TextBlock, Google Chat's `text`) and turns a bare URL or domain into a
# link; none has one escape for all of it (Slack has none at all). So the
# markers become the characters they look like, and a URL's `://` and a
# domain's dots stop reading as such: a schedule named `*x* https://a.b`
# reads the same and formats, mentions and links nothing. Each channel's own
# escaping (Slack's `&<>`, Teams' backslashes, Google Chat's HTML) still runs.
_PARECIDOS = str.maketrans({"*": "∗", "_": "＿", "~": "∼", "`": "ˋ", "|": "ǀ"})
_PONTO_DE_DOMINIO = re.compile(r"(?<=[A-Za-z0-9])\.(?=[A-Za-z])")


def texto_inerte(texto: str) -> str:
    """Text a tenant typed, as a chat shows it without reading it as markup."""
    texto = texto.translate(_PARECIDOS).replace("://", "∶//")
    return _PONTO_DE_DOMINIO.sub("․", texto)
