"""Where a webhook may point (SSRF); connections pinned to the address checked."""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import logging
import socket
import ssl
import threading
from collections.abc import Iterator
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
    if partes.username is not None or partes.password is not None:
        # Credentials in a URL end up in logs, the admin and error messages.
        raise DestinoRecusado("a URL não pode ter usuário e senha")
    try:
        porta = partes.port
    except ValueError:
        raise DestinoRecusado("porta inválida") from None
    if porta is None:  # not `or`: an explicit :0 is a port, and refused below
        porta = 443 if partes.scheme == "https" else 80
    # Local mode (development, tests) talks to throwaway servers on any port.
    if not local and porta not in settings.RELATORIOS_WEBHOOK_PORTAS:
        permitidas = ", ".join(str(p) for p in settings.RELATORIOS_WEBHOOK_PORTAS)
        raise DestinoRecusado(f"porta {porta} não permitida (permitidas: {permitidas})")
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


# NAT64 (RFC 6052): the well-known prefix reaches the IPv4 address in the last
# 32 bits through the network's translator; the local-use prefix (RFC 8215)
# goes wherever the operator routes it, so it is never public.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_TEREDO = ipaddress.IPv6Network("2001::/32")


def publico(endereco: str, *, local: bool) -> bool:
    """Is every address this one reaches public?

    An IPv6 address can carry an IPv4 one that the network unwraps on the way
    (IPv4-mapped, 6to4, NAT64): 2002:7f00:1::1 is 127.0.0.1 to a host with a
    6to4 relay. Each carried address must be public too. Teredo tunnels to a
    client behind a NAT, never a web server: refused whatever it carries.
    """
    ip = ipaddress.ip_address(endereco.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _TEREDO or ip in _NAT64_LOCAL:
            return False
        embutido = ip.ipv4_mapped or ip.sixtofour
        if embutido is None and ip in _NAT64:
            embutido = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embutido is not None:
            if ip.ipv4_mapped is None and not _publico(embutido, local=False):
                return False
            ip = embutido  # ::ffff:10.0.0.1 is 10.0.0.1
    return _publico(ip, local=local)


def _publico(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, *, local: bool) -> bool:
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


class _Prazo:
    """A whole exchange's deadline, not one socket operation's: at `prazo_s`
    a watchdog shuts the connection's socket down, so a receiver that
    answers a byte at a time (each under the per-operation timeout) still
    ends at the deadline, whatever step it is in (the TLS handshake, the
    request, the status line, the headers, the body)."""

    def __init__(self, prazo_s: float) -> None:
        self.prazo_s = prazo_s
        self.esgotado = False
        self._trava = threading.Lock()
        self._soquete: socket.socket | None = None
        self._vigia = threading.Timer(prazo_s, self._interromper)
        self._vigia.daemon = True

    def iniciar(self) -> None:
        self._vigia.start()

    def parar(self) -> None:
        self._vigia.cancel()

    def vigiar(self, soquete: socket.socket) -> None:
        """The socket to shut down at the deadline (the raw one: under TLS
        too, its handshake included); refused if the deadline already passed."""
        with self._trava:
            if self.esgotado:
                soquete.close()
                raise TimeoutError("prazo esgotado")
            self._soquete = soquete

    def _interromper(self) -> None:
        with self._trava:
            self.esgotado = True
            if self._soquete is not None:
                with contextlib.suppress(OSError):
                    self._soquete.shutdown(socket.SHUT_RDWR)


class _ConexaoFixada(http.client.HTTPConnection):
    """HTTP to one checked address; the Host header keeps the URL's name."""

    def __init__(
        self, host: str, porta: int, endereco: str, timeout: float, prazo: _Prazo
    ) -> None:
        super().__init__(host, porta, timeout=timeout)
        self.endereco = endereco
        self.prazo = prazo

    def connect(self) -> None:
        self.sock = socket.create_connection((self.endereco, self.port), self.timeout)
        self.prazo.vigiar(self.sock)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _ConexaoFixadaTls(http.client.HTTPSConnection):
    """HTTPS to one checked address; SNI and the certificate check use the name."""

    def __init__(
        self, host: str, porta: int, endereco: str, timeout: float, prazo: _Prazo
    ) -> None:
        # Kept here too: HTTPSConnection keeps it only under a private name.
        self.contexto = _contexto_tls()
        super().__init__(host, porta, timeout=timeout, context=self.contexto)
        self.endereco = endereco
        self.prazo = prazo

    def connect(self) -> None:
        bruto = socket.create_connection((self.endereco, self.port), self.timeout)
        self.prazo.vigiar(bruto)
        self.sock = self.contexto.wrap_socket(bruto, server_hostname=self.host)


def _contexto_tls() -> ssl.SSLContext:
    """The system's CAs, plus RELATORIOS_WEBHOOK_CA_ARQUIVO's if set (an
    endpoint behind a private CA; the tests' local HTTPS receivers)."""
    contexto = ssl.create_default_context()
    if settings.RELATORIOS_WEBHOOK_CA_ARQUIVO:
        contexto.load_verify_locations(cafile=settings.RELATORIOS_WEBHOOK_CA_ARQUIVO)
    return contexto


@contextlib.contextmanager
def conexao(
    partes: SplitResult, porta: int, endereco: str, timeout: float, prazo_s: float
) -> Iterator[tuple[http.client.HTTPConnection, _Prazo]]:
    """A connection to the checked address: `timeout` bounds each socket
    operation (the connect's too), `prazo_s` the whole exchange (`_Prazo`:
    its `esgotado` says the deadline cut it). Closed on the way out."""
    host = partes.hostname or ""
    prazo = _Prazo(prazo_s)
    ligacao: http.client.HTTPConnection
    if partes.scheme == "https":
        ligacao = _ConexaoFixadaTls(host, porta, endereco, timeout, prazo)
    else:
        ligacao = _ConexaoFixada(host, porta, endereco, timeout, prazo)
    prazo.iniciar()
    try:
        yield ligacao, prazo
    finally:
        prazo.parar()
        ligacao.close()
