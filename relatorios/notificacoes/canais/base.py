"""What every delivery channel is: a transport that sends one claimed delivery."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

# How much of a receiver's answer or error is kept for support.
TRECHO_MAX = 500


@dataclass(frozen=True)
class Envio:
    """One claimed delivery, as its transport needs it."""

    tenant_id: int
    canal: str
    evento: str
    mensagem_id: str
    destinatarios: list[str]
    payload: Mapping[str, Any]
    tentativa: int
    em_curso_ate: datetime
    # The endpoint a tenant registered (webhook, chat), if still active.
    url: str | None
    segredo: str | None
    # The X-Request-ID of the job's request, if the delivery is about a job.
    request_id: str | None = None


@dataclass(frozen=True)
class ResultadoDoEnvio:
    """One attempt's outcome: `ok`, or the answer's status and the error."""

    ok: bool
    status: int | None = None
    erro: str = ""
    # No later attempt can succeed (an address the rules now refuse): the
    # delivery is `falhou` at once, for support to read.
    definitivo: bool = False


class Transporte:
    """A delivery channel: one folder under `canais/`, one line in its registry.

    `por_url`: a tenant registers it as an endpoint (`relatorio_webhooks`,
    with this `canal`); otherwise it is sent to addresses (email). `hosts`:
    the only hosts its URL may name (a service's documented ones; a leading
    dot admits subdomains); empty: any public host. `assinado`: its POSTs
    are signed with the endpoint's secret. `url_secreta`: the URL itself is
    the credential (a chat's incoming webhook), so it is never shown whole.
    """

    canal: ClassVar[str]
    titulo: ClassVar[str]
    por_url: ClassVar[bool] = True
    hosts: ClassVar[tuple[str, ...]] = ()
    assinado: ClassVar[bool] = False
    url_secreta: ClassVar[bool] = False

    def enviar(self, envio: Envio) -> ResultadoDoEnvio:
        raise NotImplementedError

    def host_permitido(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return not self.hosts or any(
            host.endswith(h) if h.startswith(".") else host == h for h in self.hosts
        )


def trecho(texto: str) -> str:
    texto = " ".join(texto.split())
    return texto if len(texto) <= TRECHO_MAX else texto[: TRECHO_MAX - 1] + "…"
