"""Demo tenants for the bench, made by the project's own commands.

`criar_tenant` prints the user's token as its last line; `gerar_dados` fills the
tenant's stores, sellers, products and sales. Both run in this process through
`call_command` (the same code as `manage.py ...`, without a Python start-up
per tenant).
"""

from __future__ import annotations

import io
import random
import time
from dataclasses import dataclass, field
from typing import Any

from django.core.management import call_command


@dataclass
class TenantDeBench:
    """A tenant the bench created: its id, its token and its store codes."""

    id: int
    token: str
    lojas: list[str]
    padroes: list[dict[str, Any]] = field(default_factory=list)
    ids_de_jobs: list[int] = field(default_factory=list)


def criar_tenant(nome: str, usuario: str) -> tuple[int, str]:
    saida = io.StringIO()
    call_command("criar_tenant", nome, usuario=usuario, stdout=saida)
    linhas = saida.getvalue().strip().splitlines()
    # "tenant <id> criado: ..." first; the token is the last line.
    tenant_id = int(linhas[0].split()[1])
    return tenant_id, linhas[-1].strip()


def gerar_dados(
    tenant_id: int, *, lojas: int, vendas: int, seed: int, **extras: Any
) -> float:
    """Runs gerar_dados for one tenant; returns its wall time in seconds."""
    inicio = time.monotonic()
    call_command(
        "gerar_dados",
        tenant=tenant_id,
        lojas=lojas,
        vendas=vendas,
        seed=seed,
        stdout=io.StringIO(),
        **extras,
    )
    return time.monotonic() - inicio


def padroes(lojas: list[str]) -> list[dict[str, Any]]:
    """The five standard filters every manager of a chain opens on Monday."""
    minhas = lojas[:3]
    return [
        {"inicio": "2026-06-01", "fim": "2026-06-30", "agrupar": "dia", "lojas": []},
        {"inicio": "2026-05-01", "fim": "2026-05-31", "agrupar": "dia", "lojas": []},
        {"inicio": "2026-01-01", "fim": "2026-06-30", "agrupar": "mes", "lojas": []},
        {"inicio": "2026-06-22", "fim": "2026-06-28", "agrupar": "dia", "lojas": []},
        {
            "inicio": "2026-06-01",
            "fim": "2026-06-30",
            "agrupar": "dia",
            "lojas": minhas,
        },
    ]


def criar_tenants(n: int, *, prefixo: str, seed: int = 5) -> list[TenantDeBench]:
    """n chains with 3..40 stores each (codes L001...), a few sales each."""
    rnd = random.Random(seed)
    tenants = []
    for i in range(1, n + 1):
        tenant_id, token = criar_tenant(f"Rede {prefixo} {i:03d}", f"{prefixo}{i:03d}")
        n_lojas = rnd.randint(3, 40)
        # Few sales and products: B1 only needs real store codes.
        gerar_dados(tenant_id, lojas=n_lojas, vendas=50, produtos=5, seed=i)
        codigos = [f"L{j:03d}" for j in range(1, n_lojas + 1)]
        tenants.append(
            TenantDeBench(id=tenant_id, token=token, lojas=codigos, padroes=[])
        )
        tenants[-1].padroes = padroes(codigos)
    return tenants
