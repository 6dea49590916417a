"""A TCP relay in front of a real PostgreSQL server, that can go silent.

Forwarding, it is invisible: the service connects to the relay's port and
talks to the server behind it. Silent (`silenciar`), it keeps every
connection open and answers nothing: what was in flight stays in the kernel's
buffers, new connections are accepted and never served. The kernel still
acknowledges every packet and answers keepalives, so only the service's own
deadline can tell: a server process that is stopped or wedged, or a proxy in
front of one, looks exactly like this.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class Rele:
    """Listens on 127.0.0.1:`porta`, forwarding to 127.0.0.1:`destino`."""

    def __init__(self, destino: int) -> None:
        self.destino = destino
        self._ouvinte = socket.create_server(("127.0.0.1", 0))
        self.porta = int(self._ouvinte.getsockname()[1])
        self._silencio = threading.Event()
        self._recusa = threading.Event()
        self._mudos: set[socket.socket] = set()
        self._fim = threading.Event()
        self._trava = threading.Lock()
        self._abertos: list[socket.socket] = []
        self.aceitas = 0
        threading.Thread(target=self._aceitar, name="rele", daemon=True).start()

    def url(self, banco: str = "relatorios") -> str:
        return f"postgres://postgres@127.0.0.1:{self.porta}/{banco}"

    def silenciar(self) -> None:
        """From now on nothing is answered: the open connections stay
        black-holed for good, new ones are accepted and never served."""
        with self._trava:
            self._mudos.update(self._abertos)
        self._silencio.set()

    def falar(self) -> None:
        """The server is back for new connections; the ones silenced stay so
        (a failover's old sockets)."""
        with self._trava:
            self._mudos.update(self._abertos)
        self._silencio.clear()

    def recusar(self) -> None:
        """New connections are closed at once, as a server refusing them."""
        self._recusa.set()

    def fechar(self) -> None:
        self._fim.set()
        self._ouvinte.close()
        with self._trava:
            for soquete in self._abertos:
                soquete.close()

    def _guardar(self, soquete: socket.socket) -> None:
        with self._trava:
            self._abertos.append(soquete)

    def _aceitar(self) -> None:
        while not self._fim.is_set():
            try:
                cliente, _ = self._ouvinte.accept()
            except OSError:
                return
            if self._recusa.is_set():
                cliente.close()
                continue
            self._guardar(cliente)
            self.aceitas += 1
            if self._silencio.is_set():
                with self._trava:
                    self._mudos.add(cliente)
                continue  # accepted, never served
            try:
                servidor = socket.create_connection(("127.0.0.1", self.destino))
            except OSError:
                cliente.close()
                continue
            self._guardar(servidor)
            for de, para in ((cliente, servidor), (servidor, cliente)):
                threading.Thread(
                    target=self._bombear, args=(de, para), daemon=True
                ).start()

    def _bombear(self, de: socket.socket, para: socket.socket) -> None:
        while not self._fim.is_set():
            if self._silencio.is_set() or de in self._mudos:
                # Nothing is read, so nothing is answered; the connection stays.
                self._fim.wait(0.05)
                continue
            try:
                prontos, _, _ = select.select([de], [], [], 0.05)
                dados = de.recv(65536) if prontos else None
                if dados == b"":
                    break
                if dados:
                    para.sendall(dados)
            except (OSError, ValueError):
                break
        # One side ended: so does the other, as through a real network.
        for soquete in (de, para):
            with contextlib.suppress(OSError):
                soquete.shutdown(socket.SHUT_RDWR)
