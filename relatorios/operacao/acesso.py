"""Who is knocking: the client's address, believed only as far as our proxies vouch.

The one function for it (`cliente`) serves the login lockout (django-axes,
AXES_CLIENT_IP_CALLABLE), /metrics and a cluster's metrics port, and the
web's access log. Anyone can write X-Forwarded-For; only the entries our own
proxies appended can be believed, and a proxy is ours when the socket's
address is inside RELATORIOS_PROXIES_CONFIAVEIS. So:

1. REMOTE_ADDR (the socket's peer) outside those networks: it is the client,
   whatever the headers say.
2. Otherwise walk X-Forwarded-For from the right (each proxy appends the
   address it received from), skipping entries that are our proxies too; the
   first one that is not is the client.
3. Every entry is one of our proxies (or there is none): no client was named,
   and the leftmost address stands for it.

An entry that is not an IP address (junk, `unknown`, a port) stops the walk
there: what lies left of it was not written by anything we trust.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest

logger = logging.getLogger(__name__)

Rede = ipaddress.IPv4Network | ipaddress.IPv6Network
Endereco = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class Cliente:
    """The client's address, and whether a client was actually identified.

    `identificado` is False when `endereco` names nobody in particular: it is
    one of our proxies (a relay that did not say for whom), or the peer is
    outside our proxies yet the request says it was forwarded (a proxy that
    nobody listed in RELATORIOS_PROXIES_CONFIAVEIS, or a forgery). What such
    an address may be granted must not depend on it (/metrics).
    """

    endereco: str | None
    identificado: bool


def cliente(meta: Mapping[str, Any]) -> Cliente:
    """The client of a request, from its WSGI environ or Django's request.META."""
    remoto = meta.get("REMOTE_ADDR") or None
    encaminhado = meta.get("HTTP_X_FORWARDED_FOR", "")
    proxies = settings.RELATORIOS_PROXIES_CONFIAVEIS
    if not dentro(remoto, proxies):
        if encaminhado:
            _avisar_proxy_desconhecido(remoto)
        return Cliente(remoto, identificado=not encaminhado)
    atual = remoto
    for parte in reversed(encaminhado.split(",")):
        entrada = parte.strip()
        if _ip(entrada) is None:
            break
        atual = entrada
        if not dentro(entrada, proxies):
            return Cliente(entrada, identificado=True)
    return Cliente(atual, identificado=False)


def ip_do_cliente(request: HttpRequest) -> str | None:
    """`cliente(request.META).endereco`: django-axes' AXES_CLIENT_IP_CALLABLE."""
    return cliente(request.META).endereco


def dentro(endereco: str | None, redes: Sequence[str]) -> bool:
    """Is `endereco` an IP address inside one of `redes` (CIDR texts)?"""
    if not redes:
        return False
    ip = _ip(endereco)
    return ip is not None and any(ip in rede for rede in _redes(tuple(redes)))


@functools.cache
def _redes(textos: tuple[str, ...]) -> list[Rede]:
    return [ipaddress.ip_network(texto, strict=False) for texto in textos]


def _ip(texto: str | None) -> Endereco | None:
    if not texto:
        return None
    try:
        ip = ipaddress.ip_address(texto.split("%")[0])
    except ValueError:
        return None
    # A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d.
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


class _Aviso:
    dado = False


def _avisar_proxy_desconhecido(remoto: str | None) -> None:
    # Once per process: behind a proxy that is not listed, every client has
    # the proxy's address (one login lockout for all of them), and an
    # outsider must not be able to flood the log with it.
    if _Aviso.dado:
        return
    _Aviso.dado = True
    logger.warning(
        "X-Forwarded-For de quem não está em RELATORIOS_PROXIES_CONFIAVEIS: "
        "ignorado; se é um proxy nosso, liste a sua rede",
        extra={"evento": "proxy_desconhecido", "remoto": remoto},
    )
