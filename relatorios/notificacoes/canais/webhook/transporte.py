"""The tenant's own endpoint: the event's JSON, signed per Standard Webhooks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from standardwebhooks import Webhook as Assinador

from relatorios.notificacoes.canais.base import Envio, ResultadoDoEnvio, Transporte
from relatorios.notificacoes.canais.http import postar


class Webhook(Transporte):
    canal = "webhook"
    titulo = "Webhook (POST assinado)"
    assinado = True

    def enviar(self, envio: Envio) -> ResultadoDoEnvio:
        if envio.url is None or envio.segredo is None:
            return ResultadoDoEnvio(ok=False, erro="webhook removido ou desativado")
        return postar_assinado(
            url=envio.url,
            segredo=envio.segredo,
            mensagem_id=envio.mensagem_id,
            payload=envio.payload,
            request_id=envio.request_id,
        )


def postar_assinado(
    *,
    url: str,
    segredo: str,
    mensagem_id: str,
    payload: Mapping[str, Any],
    request_id: str | None = None,
) -> ResultadoDoEnvio:
    """One signed POST to a webhook; about a job, with its request's
    `X-Request-ID` (outside the signed body)."""
    corpo = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    agora = datetime.now(UTC)
    cabecalhos = {
        "webhook-id": mensagem_id,
        "webhook-timestamp": str(int(agora.timestamp())),
        "webhook-signature": Assinador(segredo).sign(mensagem_id, agora, corpo),
    }
    return postar(url, corpo, cabecalhos=cabecalhos, request_id=request_id)
