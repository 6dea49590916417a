"""Where a webhook may point (SSRF); connections pinned to the address checked."""

from __future__ import annotations

import http.client
import ipaddress
import logging
import socket
import ssl
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

logger = logging.getLogger(__name__)


class DestinoRecusado(Exception):
    """A webhook URL this service must not call (scheme or address)."""


def destino(url: str) -> tuple[SplitResult, int, str]:
    """The URL's parts, port and the one address to connect to, after checking
    every address its host resolves to; DestinoRecusado otherwise."""
    local = settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL
    partes = urlsplit(url)
    if partes.scheme != "https" and not (local and partes.scheme == "http"):
        raise DestinoRecusado("a URL deve começar com https://")
    host = partes.hostname
    if not host:
        raise DestinoRecusado("a URL não tem host")
    try:
        porta = partes.port or (443 if partes.scheme == "https" else 80)
    except ValueError:
        raise DestinoRecusado("porta inválida") from None
    try:
        respostas = socket.getaddrinfo(host, porta, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise DestinoRecusado(f"não foi possível resolver {host}") from None
    enderecos = sorted({str(resposta[4][0]) for resposta in respostas})
    if not enderecos:
        raise DestinoRecusado(f"não foi possível resolver {host}")
    for endereco in enderecos:
        if not publico(endereco, local=local):
            raise DestinoRecusado(f"{host} resolve para um endereço não público")
    return partes, porta, enderecos[0]


def publico(endereco: str, *, local: bool) -> bool:
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    ip = ipaddress.ip_address(endereco.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
    if local and ip.is_loopback:
        return True
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


class _ConexaoFixada(http.client.HTTPConnection):
    """HTTP to one checked address; the Host header keeps the URL's name."""

    def __init__(self, host: str, porta: int, endereco: str, timeout: float) -> None:
        super().__init__(host, porta, timeout=timeout)
        self.endereco = endereco

    def connect(self) -> None:
        self.sock = socket.create_connection((self.endereco, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _ConexaoFixadaTls(http.client.HTTPSConnection):
    """HTTPS to one checked address; SNI and the certificate check use the name."""

    def __init__(self, host: str, porta: int, endereco: str, timeout: float) -> None:
        super().__init__(
            host, porta, timeout=timeout, context=ssl.create_default_context()
        )
        self.endereco = endereco

    def connect(self) -> None:
        bruto = socket.create_connection((self.endereco, self.port), self.timeout)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            bruto, server_hostname=self.host
        )


def conexao(
    partes: SplitResult, porta: int, endereco: str, timeout: float
) -> http.client.HTTPConnection:
    host = partes.hostname or ""
    if partes.scheme == "https":
        return _ConexaoFixadaTls(host, porta, endereco, timeout)
    return _ConexaoFixada(host, porta, endereco, timeout)
