"""`python -m bench [--only B1,B2] [--quick]`: the entry point of `make bench`.

1. Derives the bench's own database from DATABASE_URL (same server, name
   `<name>_run_<hash of this checkout's path>` unless --database or
   BENCH_DATABASE) and points DATABASE_URL at it, so that this
   process and every child (web server, qcluster, manage.py) use it.
2. Creates it (dropping a leftover of an interrupted run), migrates it.
3. Runs the chosen scenarios; each prints one line per figure.
3a. Before each scenario, empties the job and queue tables (tenants and their
   ERP data stay), so no scenario works through another's leftovers.
4. Always, also on failure, Ctrl-C or SIGTERM: stops every process it started
   and drops the database.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from types import FrameType

import dj_database_url

from bench.ambiente import RAIZ, SAIDA, Banco, fechar_monitor, parar_todos
from bench.contexto import Contexto, nota

# Also the order they run in, whatever the order of --only.
CENARIOS = ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "B10", "B11")


def main(argv: list[str] | None = None) -> int:
    args = _argumentos(argv)
    banco = _banco(args.database)
    os.environ["DATABASE_URL"] = banco.url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Submits (B1 over HTTP, B2 and B4 in-process) pile up pending jobs of one
    # tenant with no cluster running: the figures are about the submit path,
    # not about the per-tenant caps. Every new job gets its queue message, as
    # it would with a free slot (with the default in-flight cap of 2, a
    # tenant's third pending job waits without one).
    os.environ.setdefault("RELATORIOS_MAX_PENDENTES_POR_TENANT", str(10**9))
    os.environ.setdefault("RELATORIOS_MAX_EXECUTANDO_POR_TENANT", str(10**9))
    # One token sends thousands of requests a second: the per-token limit is
    # lifted out of reach but stays on, so its one statement is in the figures.
    os.environ.setdefault("RELATORIOS_API_LIMITE", str(10**9))
    # The web server and qcluster refuse the settings' built-in key
    # (config/arranque.py).
    os.environ.setdefault(
        "DJANGO_SECRET_KEY", "relatorios-bench-key-not-a-secret-3e9b1d7c5a2f4e60"
    )
    pedidos = {c.strip().upper() for c in args.only.split(",") if c.strip()}
    escolhidos = [c for c in CENARIOS if c in pedidos]
    desconhecidos = sorted(pedidos - set(CENARIOS))
    if desconhecidos:
        print(f"unknown scenario(s): {', '.join(desconhecidos)}", file=sys.stderr)
        return 2
    ctx = Contexto(
        banco=banco,
        rapido=args.quick,
        duracao_s=args.duration or (3 if args.quick else 10),
        aquecimento_s=1 if args.quick else 3,
        conexoes=args.connections,
        n_tenants=args.tenants or (20 if args.quick else 200),
        cenarios_b1=[c.strip().lower() for c in args.b1.split(",") if c.strip()],
        partes_b8=[c.strip().lower() for c in args.b8.split(",") if c.strip()],
        perfil=args.profile,
        par=not args.no_peer,
        servidores=[x.strip() for x in args.servers.split(",") if x.strip()],
    )
    # Started in the background by a shell, a process inherits SIGINT
    # ignored; Ctrl-C (or kill -INT) must still stop the bench and clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interromper)
    signal.signal(signal.SIGHUP, _interromper)
    SAIDA.mkdir(exist_ok=True)
    _cabecalho(ctx, escolhidos)
    codigo = 0
    try:
        inicio = time.monotonic()
        banco.criar()
        import django
        from django.core.management import call_command

        django.setup()
        # The figures are the output; the app's INFO lines of in-process
        # submits (B2, B4) would drown them. Children keep their own levels.
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("django-q").setLevel(logging.WARNING)
        call_command("migrate", verbosity=0)
        nota(f"database {banco.nome} created and migrated")
        for nome in escolhidos:
            banco.sem_jobs()
            _executor(nome)(ctx)
        nota(f"done in {time.monotonic() - inicio:.0f}s")
    except KeyboardInterrupt:
        nota("interrupted: cleaning up")
        codigo = 130
    except Exception:
        traceback.print_exc()
        nota("failed: cleaning up")
        codigo = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C waits
        parar_todos()
        fechar_monitor()
        _fechar_conexoes()
        if args.keep_database:
            nota(f"database {banco.nome} kept (--keep-database)")
        else:
            banco.apagar()
            nota(f"database {banco.nome} dropped")
    return codigo


def _executor(nome: str) -> Callable[[Contexto], None]:
    from bench import (
        b1_http,
        b2_consultas,
        b3_pipeline,
        b4_historico,
        b5_relatorios,
        b6_dados,
        b7_planilhas,
        b8_vizinho,
        b9_eventos,
        b10_piso,
        b11_mes,
    )

    modulos = {
        "B1": b1_http,
        "B2": b2_consultas,
        "B3": b3_pipeline,
        "B4": b4_historico,
        "B5": b5_relatorios,
        "B6": b6_dados,
        "B7": b7_planilhas,
        "B8": b8_vizinho,
        "B9": b9_eventos,
        "B10": b10_piso,
        "B11": b11_mes,
    }
    executar: Callable[[Contexto], None] = modulos[nome].executar
    return executar


def _argumentos(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--only", default=",".join(CENARIOS), help="e.g. B1,B2")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: short runs and small data (figures not comparable)",
    )
    p.add_argument("--b1", default="s1,s2,s3,s4", help="B1 scenarios, e.g. s1,s3")
    p.add_argument(
        "--b8",
        default="leque,lento,downloads",
        help="B8 parts, e.g. lento (the slow receivers' line alone)",
    )
    p.add_argument("--duration", type=int, help="seconds per wrk run (default 10)")
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--tenants", type=int, help="B1 tenants (default 200)")
    p.add_argument("--database", help="bench database name (default <name>_run)")
    p.add_argument(
        "--profile",
        action="store_true",
        help="py-spy on the web workers during B1 (bench-output/perfil-*)",
    )
    p.add_argument(
        "--servers",
        default="granian",
        help="B1 web servers, each measured: granian (config/servidor.py as it"
        " ships), granian:WxT (W workers x T threads)",
    )
    p.add_argument(
        "--no-peer",
        action="store_true",
        help="B1 without the seed peer (bench/par.py; make bench PEER=0)",
    )
    p.add_argument("--keep-database", action="store_true", help="for debugging")
    return p.parse_args(argv)


def _banco(nome: str | None) -> Banco:
    base = dj_database_url.parse(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/relatorios")
    )
    return Banco(
        host=base.get("HOST") or "127.0.0.1",
        porta=int(base.get("PORT") or 5432),
        usuario=base.get("USER") or "postgres",
        senha=base.get("PASSWORD") or "",
        nome=nome or os.environ.get("BENCH_DATABASE") or _nome_derivado(base["NAME"]),
    )


def _nome_derivado(nome: str) -> str:
    """`<name>_run_<6 hex of this checkout's path>`: two checkouts (worktrees)
    benchmarking against one server at once never drop each other's database."""
    marca = hashlib.sha256(str(RAIZ).encode()).hexdigest()[:6]
    return f"{nome}_run_{marca}"


def _cabecalho(ctx: Contexto, escolhidos: list[str]) -> None:
    modelo = "?"
    for texto in open("/proc/cpuinfo").read().splitlines():  # noqa: SIM115
        if texto.startswith("model name"):
            modelo = texto.split(":", 1)[1].strip()
            break
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    nota(
        f"relatorios bench {' '.join(escolhidos)}{' (quick)' if ctx.rapido else ''}"
        f" | commit {commit or '?'} | {os.cpu_count()} cpu {modelo}"
        f" | Python {platform.python_version()} | {time.strftime('%Y-%m-%d %H:%M %Z')}"
    )


def _interromper(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _fechar_conexoes() -> None:
    try:
        from django.db import connections

        connections.close_all()
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(main())
