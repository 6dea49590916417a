"""One JSON POST to an endpoint a tenant registered, at the address checked now."""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from relatorios.notificacoes import destinos
from relatorios.notificacoes.canais.base import TRECHO_MAX, ResultadoDoEnvio, trecho
from relatorios.notificacoes.destinos import DestinoRecusado
from relatorios.operacao import logs


def postar(
    url: str,
    corpo: Mapping[str, Any] | str,
    *,
    cabecalhos: Mapping[str, str] | None = None,
    request_id: str | None = None,
) -> ResultadoDoEnvio:
    """POST `corpo` (JSON) to `url`: its address checked again now (SSRF) and
    connected to as checked (no redirects followed); each socket operation
    within RELATORIOS_WEBHOOK_TIMEOUT_S and the whole POST within twice
    that (`prazo_do_post_s`); a 2xx is `ok`, anything else an error support
    can read."""
    try:
        partes, porta, endereco = destinos.destino(url)
    except DestinoRecusado as recusa:
        return ResultadoDoEnvio(ok=False, erro=f"destino recusado: {recusa}")
    texto = (
        corpo
        if isinstance(corpo, str)
        else json.dumps(corpo, ensure_ascii=False, separators=(",", ":"))
    )
    todos = {
        "Content-Type": "application/json",
        "User-Agent": "relatorios-webhooks/1",
        **(cabecalhos or {}),
    }
    if request_id:
        todos[logs.CABECALHO] = request_id
    caminho = (partes.path or "/") + (f"?{partes.query}" if partes.query else "")
    timeout = settings.RELATORIOS_WEBHOOK_TIMEOUT_S
    prazo_s = prazo_do_post_s()
    with destinos.conexao(partes, porta, endereco, timeout, prazo_s) as (
        conexao,
        prazo,
    ):
        try:
            conexao.request("POST", caminho, body=texto.encode(), headers=todos)
            resposta = conexao.getresponse()
            # Only an excerpt: a receiver's answer says nothing we act on.
            lido = resposta.read(TRECHO_MAX).decode(errors="replace")
        except (OSError, http.client.HTTPException) as exc:
            if prazo.esgotado:
                # A receiver answering a byte at a time, each in time.
                erro = f"resposta incompleta em {prazo_s:g} s (prazo do envio)"
            elif isinstance(exc, TimeoutError):
                erro = f"sem resposta em {timeout:g} s"
            else:
                erro = trecho(f"{type(exc).__name__}: {exc}")
            return ResultadoDoEnvio(ok=False, erro=erro)
    if 200 <= resposta.status < 300:
        return ResultadoDoEnvio(ok=True, status=resposta.status)
    return ResultadoDoEnvio(
        ok=False,
        status=resposta.status,
        erro=trecho(f"HTTP {resposta.status}: {lido}"),
    )


def prazo_do_post_s() -> float:
    """The whole POST's deadline (connect, send, status line, headers, the
    excerpt): the connect's timeout plus the answer's."""
    return 2 * settings.RELATORIOS_WEBHOOK_TIMEOUT_S
