"""The delivery channels, listed once: a channel is one folder and one line.

Like healthchecks' `hc/integrations/<kind>/` and its TRANSPORTS: each
channel lives in `canais/<canal>/transporte.py` (a `Transporte`: how it
sends, which hosts its URL may name, whether it signs), and this registry
is what the outbox, the sender, the metrics' labels, the API, the pages and
the admin read their lists from. Adding a channel is its folder, its line
below, and its tests.
"""

from __future__ import annotations

from relatorios.notificacoes.canais.base import Envio, ResultadoDoEnvio, Transporte
from relatorios.notificacoes.canais.email.transporte import Email
from relatorios.notificacoes.canais.google_chat.transporte import GoogleChat
from relatorios.notificacoes.canais.slack.transporte import Slack
from relatorios.notificacoes.canais.teams.transporte import Teams
from relatorios.notificacoes.canais.webhook.transporte import Webhook

TRANSPORTES: dict[str, Transporte] = {
    t.canal: t for t in (Email(), Webhook(), Slack(), Teams(), GoogleChat())
}


class CanalDesconhecido(LookupError):
    """No channel of that name."""


def obter(canal: str) -> Transporte:
    try:
        return TRANSPORTES[canal]
    except KeyError:
        raise CanalDesconhecido(canal) from None


def por_url() -> list[Transporte]:
    """The channels a tenant registers as an endpoint (all but email)."""
    return [t for t in TRANSPORTES.values() if t.por_url]


def escolhas_por_url() -> list[tuple[str, str]]:
    return [(t.canal, t.titulo) for t in por_url()]


__all__ = [
    "TRANSPORTES",
    "CanalDesconhecido",
    "Envio",
    "ResultadoDoEnvio",
    "Transporte",
    "escolhas_por_url",
    "obter",
    "por_url",
]
