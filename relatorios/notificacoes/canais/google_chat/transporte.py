"""Google Chat: a space's incoming webhook gets a card (and a line of text).

The payload is Google Chat's documented message (developers.google.com,
"Build a Google Chat app as a webhook"): `text` for the notification and a
`cardsV2` card with a header, the facts as decoratedText widgets and a
button that opens the link. Text a tenant typed is escaped for the card
(it reads a subset of HTML), and `<` `>` are kept out of the plain text so a
schedule named `<users/all>` mentions nobody.
"""

from __future__ import annotations

import html
from typing import Any

from relatorios.notificacoes.canais.base import Envio
from relatorios.notificacoes.canais.chat import Chat
from relatorios.notificacoes.email import Resumo


class GoogleChat(Chat):
    canal = "google_chat"
    titulo = "Google Chat"
    hosts = ("chat.googleapis.com",)
    cabecalhos = {"Content-Type": "application/json; charset=UTF-8"}

    def mensagem(self, resumo: Resumo, envio: Envio) -> dict[str, Any]:
        return mensagem(resumo, envio.mensagem_id)


def mensagem(resumo: Resumo, cartao_id: str) -> dict[str, Any]:
    widgets: list[dict[str, Any]] = [
        {"decoratedText": {"topLabel": html.escape(r), "text": html.escape(v)}}
        for r, v in resumo.campos
    ]
    if resumo.link is not None:
        titulo, url = resumo.link
        widgets.append(
            {
                "buttonList": {
                    "buttons": [{"text": titulo, "onClick": {"openLink": {"url": url}}}]
                }
            }
        )
    return {
        "text": resumo.titulo.replace("<", "‹").replace(">", "›"),
        "cardsV2": [
            {
                "cardId": cartao_id[:64],
                "card": {
                    "header": {"title": html.escape(resumo.titulo)},
                    "sections": [{"widgets": widgets}],
                },
            }
        ],
    }
