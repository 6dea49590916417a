"""Slack: an incoming webhook's message (text for notifications, blocks to read).

The payload is Slack's documented one (api.slack.com/messaging/webhooks):
`text` (the notification's line, required as a fallback when blocks are
sent) and `blocks` (a header, the facts as fields, a button to the link).
Text a tenant typed is escaped (`&`, `<`, `>`), so a schedule named
`<!channel>` mentions nobody.
"""

from __future__ import annotations

from typing import Any

from relatorios.notificacoes.canais.base import Envio
from relatorios.notificacoes.canais.chat import Chat
from relatorios.notificacoes.email import Resumo

# Slack refuses a section with more than ten fields.
CAMPOS_MAX = 10


class Slack(Chat):
    canal = "slack"
    titulo = "Slack"
    hosts = ("hooks.slack.com",)

    def mensagem(self, resumo: Resumo, envio: Envio) -> dict[str, Any]:
        return mensagem(resumo)


def mensagem(resumo: Resumo) -> dict[str, Any]:
    blocos: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": resumo.titulo[:150]}}
    ]
    if resumo.campos:
        blocos.append(
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": f"*{_escapar(r)}*\n{_escapar(v)}"}
                    for r, v in resumo.campos[:CAMPOS_MAX]
                ],
            }
        )
    if resumo.link is not None:
        titulo, url = resumo.link
        blocos.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": titulo},
                        "url": url,
                    }
                ],
            }
        )
    return {"text": _escapar(resumo.titulo), "blocks": blocos}


def _escapar(texto: str) -> str:
    # Slack's three control characters (api.slack.com: "Escaping text").
    return texto.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
