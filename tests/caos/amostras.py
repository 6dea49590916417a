"""What the soak samples while it runs: each tenant's running jobs and its
deliveries in flight (four times a second, one statement each, a snapshot),
when each occurrence was first seen fired, and every process's RSS (every
two seconds)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import psycopg

from tests.caos.implantacao import Implantacao, rss_mb


@dataclass(frozen=True)
class AcimaDoLimite:
    em: float
    tenant_id: int
    executando: int


@dataclass
class Amostras:
    acima: list[AcimaDoLimite] = field(default_factory=list)
    instantes: int = 0
    # Deliveries in flight (a queue message waits for them or a sender holds
    # them: `enfileirada_em` set) beyond the tenant's slots.
    entregas_acima: list[AcimaDoLimite] = field(default_factory=list)
    # The most deliveries of one tenant seen in flight at once.
    entregas_max: int = 0
    # (role, pid) -> [(when, MB)]
    rss: dict[tuple[str, int], list[tuple[float, float]]] = field(default_factory=dict)
    erros: int = 0
    # Occurrence id -> when a sample first saw it `disparada`: an upper bound
    # of its firing's commit (its disparada_em is the firing pass's start,
    # which on a loaded host can be seconds earlier).
    disparadas: dict[int, float] = field(default_factory=dict)


class Amostrador(threading.Thread):
    def __init__(self, impl: Implantacao, limite: int, vagas_de_entrega: int) -> None:
        super().__init__(name="amostrador", daemon=True)
        self.impl = impl
        self.limite = limite
        self.vagas_de_entrega = vagas_de_entrega
        self.amostras = Amostras()
        self._parar = threading.Event()

    def run(self) -> None:
        conexao: psycopg.Connection | None = None
        proximo_rss = 0.0
        while not self._parar.wait(0.25):
            try:
                if conexao is None or conexao.closed:
                    conexao = self.impl.conectar()
                self._executando(conexao)
            except psycopg.Error:
                self.amostras.erros += 1
                conexao = None
            if time.time() >= proximo_rss:
                proximo_rss = time.time() + 2.0
                self._rss()
        if conexao is not None:
            conexao.close()

    def _executando(self, conexao: psycopg.Connection) -> None:
        linhas = conexao.execute(
            "SELECT tenant_id, count(*) FROM relatorio_jobs"
            " WHERE status = 'executando' GROUP BY tenant_id HAVING count(*) > %s",
            [self.limite],
        ).fetchall()
        agora = time.time()
        self.amostras.instantes += 1
        for tenant_id, n in linhas:
            self.amostras.acima.append(AcimaDoLimite(agora, tenant_id, n))
        for tenant_id, n in conexao.execute(
            "SELECT tenant_id, count(*) FROM relatorio_entregas"
            " WHERE estado = 'pendente' AND enfileirada_em IS NOT NULL"
            " GROUP BY tenant_id"
        ).fetchall():
            self.amostras.entregas_max = max(self.amostras.entregas_max, n)
            if n > self.vagas_de_entrega:
                self.amostras.entregas_acima.append(
                    AcimaDoLimite(time.time(), tenant_id, n)
                )
        for (ocorrencia_id,) in conexao.execute(
            "SELECT id FROM relatorio_ocorrencias WHERE estado = 'disparada'"
            " AND disparada_em > now() - interval '2 minutes'"
        ).fetchall():
            self.amostras.disparadas.setdefault(ocorrencia_id, agora)

    def _rss(self) -> None:
        agora = time.time()
        for papel, pid in self.impl.processos_vivos():
            mb = rss_mb(pid)
            if mb is not None:
                self.amostras.rss.setdefault((papel, pid), []).append((agora, mb))

    def parar(self) -> Amostras:
        self._parar.set()
        self.join(10)
        return self.amostras
