"""Instructions per request, counted by callgrind: the figure that does not move
with the neighbours.

CPU time per request on a shared two-core machine swings ±10% (or 2× when the
sibling vCPU is busy); the number of instructions a request executes does not.
This runs a child Python under `valgrind --tool=callgrind`: it serves requests
in-process through config.wsgi's handler (request signals, middleware, DRF,
as B2 does, with prepared statements on as in the web's workers), and for each
kind, after a warm-up, loops N requests between two calls of `os.getppid()`,
a libc function Python calls nowhere else on this path. `--dump-before=getppid`
makes callgrind write its counters at each call and reset them, so each loop's
total is one dump file: no second run to subtract.

    .venv/bin/python -m bench.instrucoes [--n 400] [--casos status,dedup,novo]

run alone, it creates a tenant of its own in DATABASE_URL's database (jobs stay
pending: no cluster runs). B2 calls `medir` with one of the bench's tenants.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

CASOS = ("status", "dedup", "novo")
NOMES = {"status": "status GET", "dedup": "dedup hit", "novo": "new submit"}
_FILTRO = {"inicio": "2033-01-01", "fim": "2033-01-31", "agrupar": "dia"}


def medir(
    token: str, *, n: int = 400, aquecimento: int = 50, casos: tuple[str, ...] = CASOS
) -> dict[str, float]:
    """Instructions per request of each kind (one valgrind run of a child)."""
    python = sys.executable
    with tempfile.TemporaryDirectory() as pasta:
        saida = Path(pasta) / "cg.out"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DB_PREPARE_THRESHOLD": os.environ.get("DB_PREPARE_THRESHOLD", "5"),
            "PYTHONHASHSEED": "0",
            "BENCH_INSTRUCOES_TOKEN": token,
        }
        comando = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={saida}",
            "--dump-before=getppid",
            python,
            "-m",
            "bench.instrucoes",
            "--filho",
            f"--n={n}",
            f"--aquecimento={aquecimento}",
            f"--casos={','.join(casos)}",
        ]
        raiz = Path(__file__).resolve().parent.parent
        feito = subprocess.run(
            comando, cwd=raiz, env=env, capture_output=True, text=True, check=False
        )
        if feito.returncode != 0:
            raise RuntimeError(
                f"callgrind child failed ({feito.returncode}):\n{feito.stderr[-3000:]}"
            )
        # Dumps 1, 3, 5...: set-up and warm-ups; 2, 4, 6...: the loops.
        resultado = {}
        for i, caso in enumerate(casos):
            total = _total(Path(f"{saida}.{2 * i + 2}"))
            resultado[caso] = total / n
        return resultado


def _total(arquivo: Path) -> int:
    for texto in arquivo.read_text().splitlines():
        if texto.startswith("totals:") or texto.startswith("summary:"):
            return int(texto.split()[1])
    raise RuntimeError(f"no totals in {arquivo}")


def _filho(n: int, aquecimento: int, casos: list[str]) -> None:
    import django

    django.setup()
    from bench.chamada import chamar
    from relatorios.api.cadeia import HandlerWsgi, sinais_do_servidor

    token = os.environ["BENCH_INSTRUCOES_TOKEN"]
    app = HandlerWsgi()
    sinais_do_servidor()  # as config/wsgi.py
    contador = iter(range(10**6))

    def novo() -> int:
        inicio = date(2033, 1, 1) + timedelta(days=next(contador) % 3000)
        corpo = {
            "inicio": inicio.isoformat(),
            "fim": (inicio + timedelta(days=20)).isoformat(),
            "agrupar": "mes",
        }
        return chamar(app, "POST", "/relatorios/vendas", token, corpo)

    # A job of this tenant to read, and the filter a dedup hit repeats.
    chamar(app, "POST", "/relatorios/vendas", token, _FILTRO)
    from relatorios.models import RelatorioJob

    job_id = RelatorioJob.objects.order_by("-id").only("id").first().id  # type: ignore[union-attr]
    fazer: dict[str, Callable[[], int]] = {
        "status": lambda: chamar(app, "GET", f"/relatorios/jobs/{job_id}", token, None),
        "dedup": lambda: chamar(app, "POST", "/relatorios/vendas", token, _FILTRO),
        "novo": novo,
    }
    esperado = {"status": 200, "dedup": 202, "novo": 202}
    for caso in casos:
        for _ in range(aquecimento):
            status = fazer[caso]()
            if status != esperado[caso]:
                raise RuntimeError(f"{caso}: HTTP {status}, not {esperado[caso]}")
        os.getppid()  # callgrind dumps here...
        for _ in range(n):
            fazer[caso]()
        os.getppid()  # ...and here: the loop alone


def _token_novo() -> str:
    import django

    django.setup()
    from bench.preparo import criar_tenant

    _, token = criar_tenant(
        f"Rede instrucoes {time.time_ns()}", f"instr{time.time_ns() % 10**9}"
    )
    return token


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.instrucoes", description=__doc__)
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--aquecimento", type=int, default=50)
    p.add_argument("--casos", default=",".join(CASOS))
    p.add_argument("--filho", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    casos = [c.strip() for c in args.casos.split(",") if c.strip()]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if args.filho:
        # The app's log lines are part of the cost (as in the web); not their
        # destination's.
        sys.stdout = io.StringIO()
        _filho(args.n, args.aquecimento, casos)
        return 0
    os.environ.setdefault("RELATORIOS_MAX_PENDENTES_POR_TENANT", str(10**9))
    os.environ.setdefault("RELATORIOS_MAX_EXECUTANDO_POR_TENANT", str(10**9))
    os.environ.setdefault("RELATORIOS_API_LIMITE", str(10**9))
    token = _token_novo()
    resultado = medir(token, n=args.n, aquecimento=args.aquecimento, casos=tuple(casos))
    print(json.dumps({NOMES[c]: round(v) for c, v in resultado.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
