"""A real HTTP receiver that answers one byte at a time: each byte in time
for any per-operation timeout, the whole answer never in time."""

from __future__ import annotations

import socket
import threading


class ReceptorLento:
    """On 127.0.0.1: reads each request whole, then writes a 200 one byte
    every `intervalo_s`; counts the requests it took."""

    RESPOSTA = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    def __init__(self, intervalo_s: float = 1.5) -> None:
        self.intervalo_s = intervalo_s
        self.pedidos = 0
        self._fim = threading.Event()
        self._servidor = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._servidor.getsockname()[1]}/lento"
        threading.Thread(target=self._aceitar, daemon=True).start()

    def _aceitar(self) -> None:
        while not self._fim.is_set():
            try:
                conexao, _ = self._servidor.accept()
            except OSError:
                return
            threading.Thread(target=self._atender, args=(conexao,), daemon=True).start()

    def _atender(self, conexao: socket.socket) -> None:
        with conexao:
            try:
                self._ler_pedido(conexao)
                self.pedidos += 1
                for byte in self.RESPOSTA:
                    if self._fim.wait(self.intervalo_s):
                        return
                    conexao.sendall(bytes([byte]))
            except OSError:
                return  # the sender gave up: what this receiver is for

    @staticmethod
    def _ler_pedido(conexao: socket.socket) -> None:
        dados = b""
        while b"\r\n\r\n" not in dados:
            bloco = conexao.recv(65536)
            if not bloco:
                raise ConnectionError("pedido incompleto")
            dados += bloco
        cabecalho, _, corpo = dados.partition(b"\r\n\r\n")
        tamanho = 0
        for linha in cabecalho.split(b"\r\n")[1:]:
            nome, _, valor = linha.partition(b":")
            if nome.strip().lower() == b"content-length":
                tamanho = int(valor)
        while len(corpo) < tamanho:
            bloco = conexao.recv(65536)
            if not bloco:
                raise ConnectionError("corpo incompleto")
            corpo += bloco

    def fechar(self) -> None:
        self._fim.set()
        self._servidor.close()
