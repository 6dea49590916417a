"""`python -m tests.caos --duracao 10m --semente 7`: the entry point of `make caos`."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from tests import processos
from tests.caos.parametros import Parametros


def segundos(texto: str) -> float:
    """`90`, `90s`, `10m`, `1h` -> seconds."""
    casado = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", texto)
    if casado is None:
        raise argparse.ArgumentTypeError(f"duration like 90s, 10m or 1h: {texto!r}")
    valor, unidade = casado.groups()
    return float(valor) * {"": 1, "s": 1, "m": 60, "h": 3600}[unidade]


def argumentos(argv: list[str] | None) -> Parametros:
    from tests.caos import soak

    p = argparse.ArgumentParser(prog="python -m tests.caos", description=soak.__doc__)
    p.add_argument("--duracao", type=segundos, default=segundos("10m"))
    p.add_argument(
        "--semente",
        type=int,
        default=None,
        help="the fault plan's seed (default: the clock's; printed, replay with it)",
    )
    p.add_argument(
        "--sem-replica",
        action="store_true",
        help="one database on DATABASE_URL's server instead of a private"
        " primary and streaming replica",
    )
    p.add_argument("--calma", type=float, default=0.2, help="calm share of the load")
    p.add_argument("--intervalo", type=float, default=3.0, help="mean s between faults")
    p.add_argument("--limite-final", type=segundos, default=segundos("180s"))
    p.add_argument(
        "--sem-falha",
        action="append",
        default=[],
        help="leave a fault kind out (repeatable)",
    )
    p.add_argument("--saida", type=Path, help="default: caos-output/<date>-<seed>")
    p.add_argument("--manter", action="store_true", help="keep the database")
    a = p.parse_args(argv)
    semente = a.semente if a.semente is not None else int(time.time()) % 100_000
    saida = a.saida or (
        processos.RAIZ / "caos-output" / f"{time.strftime('%Y%m%d-%H%M%S')}-{semente}"
    )
    return Parametros(
        duracao_s=a.duracao,
        semente=semente,
        saida=saida,
        replica=not a.sem_replica,
        calma=a.calma,
        intervalo_medio_s=a.intervalo,
        limite_final_s=a.limite_final,
        manter=a.manter,
        sem_falhas=frozenset(a.sem_falha),
    )


def main(argv: list[str] | None = None) -> int:
    from tests.caos.soak import executar

    return executar(argumentos(argv))


if __name__ == "__main__":
    sys.exit(main())
