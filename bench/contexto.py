"""What the scenarios share within one run: the database, the mode, the tenants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.ambiente import Banco

if TYPE_CHECKING:
    from bench.preparo import TenantDeBench


@dataclass
class Contexto:
    """One bench run's settings and the state scenarios may reuse."""

    banco: Banco
    rapido: bool
    duracao_s: int
    aquecimento_s: int
    conexoes: int
    n_tenants: int
    cenarios_b1: list[str]
    # B8's parts: the fan-out (leque), the slow receivers (lento), downloads.
    partes_b8: list[str] = field(
        default_factory=lambda: ["leque", "lento", "downloads"]
    )
    perfil: bool = False
    par: bool = True  # B1 also measures the seed peer (bench/par.py)
    # B1's servers (bench.ambiente.iniciar_web); the first is the reference.
    servidores: list[str] = field(default_factory=lambda: ["granian"])
    _tenants: list[TenantDeBench] | None = field(default=None, repr=False)

    def tenants(self) -> list[TenantDeBench]:
        """The B1 chains (created on first use, then shared by B1 and B2)."""
        if self._tenants is None:
            from bench.preparo import criar_tenants

            self._tenants = criar_tenants(self.n_tenants, prefixo="bench")
        return self._tenants


def linha(figura: str, texto: str) -> None:
    """One figure per line, greppable by its first word (B1, B2, ...)."""
    print(f"{figura:<22} {texto}", flush=True)


def nota(texto: str) -> None:
    """Context that is not a figure (set-up steps, timings of the set-up)."""
    print(f"# {texto}", flush=True)
