"""Microsoft Teams: an Adaptive Card posted to a channel's incoming webhook.

The payload is the one Teams' "Post to a channel when a webhook request is
received" workflow (and the older Office 365 connector) reads: a `message`
with one attachment of type `application/vnd.microsoft.card.adaptive`, whose
card has the title, a FactSet of the facts and an Action.OpenUrl to the
link. A card's text is not HTML, and no mention is made without an explicit
`msteams.entities` entry, so a tenant's text cannot ping anyone.
"""

from __future__ import annotations

from typing import Any

from relatorios.notificacoes.canais.base import Envio
from relatorios.notificacoes.canais.chat import Chat
from relatorios.notificacoes.email import Resumo

ESQUEMA = "http://adaptivecards.io/schemas/adaptive-card.json"


class Teams(Chat):
    canal = "teams"
    titulo = "Microsoft Teams"
    # Workflows (Power Automate) webhooks, and the older connectors'.
    hosts = (".logic.azure.com", ".api.powerplatform.com", ".webhook.office.com")

    def mensagem(self, resumo: Resumo, envio: Envio) -> dict[str, Any]:
        return mensagem(resumo)


def mensagem(resumo: Resumo) -> dict[str, Any]:
    cartao: dict[str, Any] = {
        "$schema": ESQUEMA,
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {
                "type": "TextBlock",
                "text": _escapar(resumo.titulo),
                "weight": "Bolder",
                "size": "Medium",
                "wrap": True,
            },
            {
                "type": "FactSet",
                "facts": [
                    {"title": _escapar(r), "value": _escapar(v)}
                    for r, v in resumo.campos
                ],
            },
        ],
    }
    if resumo.link is not None:
        titulo, url = resumo.link
        cartao["actions"] = [{"type": "Action.OpenUrl", "title": titulo, "url": url}]
    return {
        "type": "message",
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": None,
                "content": cartao,
            }
        ],
    }


def _escapar(texto: str) -> str:
    # TextBlock reads a Markdown subset: a name like [x](https://...) must
    # stay text, not become a link.
    for marca in ("\\", "[", "]", "(", ")", "*", "_", "`"):
        texto = texto.replace(marca, "\\" + marca)
    return texto
