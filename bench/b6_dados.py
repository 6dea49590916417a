"""B6 data: `manage.py gerar_dados` for one million sales, as a user runs it."""

from __future__ import annotations

import time

from bench.ambiente import (
    PYTHON,
    SAIDA,
    MedidorCpu,
    Processo,
    ambiente,
    formatar_cpu,
    pids_do_banco,
)
from bench.contexto import Contexto, linha
from bench.preparo import criar_tenant


def executar(ctx: Contexto) -> None:
    vendas = 100_000 if ctx.rapido else 1_000_000
    tenant_id, _ = criar_tenant("Rede Dados", "dados")
    medidor = MedidorCpu(
        {"postgres": lambda: pids_do_banco(ctx.banco)}, detalhar=frozenset()
    )
    args = [PYTHON, "manage.py", "gerar_dados", "--tenant", str(tenant_id)]
    args += ["--lojas", "20", "--vendas", str(vendas), "--seed", "11"]
    medidor.iniciar()
    inicio = time.monotonic()
    processo = Processo("gerar_dados", args, ambiente(), SAIDA / "b6-gerar_dados.log")
    codigo = processo.popen.wait()
    duracao = time.monotonic() - inicio
    uso = medidor.parar()
    processo.parar()
    if codigo != 0:
        raise RuntimeError(f"gerar_dados failed:\n{processo.texto_do_log()}")
    linha(
        "B6 gerar_dados",
        f"{vendas:,} sales (+{vendas // 5:,} stock movements, 20 stores) in "
        f"{duracao:.1f}s, process start included (target <= 60 s)"
        f"  | {formatar_cpu(uso)}",
    )
