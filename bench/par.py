"""The reference peer: seed 000's own design (Express 5 + node-postgres) as a
running service, measured in the same run as relatorios (issue 11).

Absolute figures on a shared 2-core machine move 2-4x between runs; ratios
taken in one run, with the two servers alternating, do not. The peer lives
outside the repository (`../shared/peers/express-seed/` from its root, or
`BENCH_PEER_DIR`) and is never copied into it: its own `start.sh` copies it
into `bench-output/express-seed/` (shared/ is read-only in CI), installs its
package-lock there with `npm ci`, creates its database and N tenants' tokens,
and starts it. Node and npm come from Debian's packages, installed here when
missing, as wrk is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.ambiente import SAIDA, Banco, Processo, ambiente, porta_livre
from bench.contexto import nota

PASTA_PADRAO = Path(__file__).resolve().parent.parent.parent / "shared" / "peers"


@dataclass
class Par:
    """The running peer: its URL, its database, its tenants' tokens in order."""

    processo: Processo
    url: str
    banco: Banco
    tokens: list[str]

    def pids(self) -> list[int]:
        # start.sh has exited; node stays in its process group.
        return self.processo.pids()

    def parar(self) -> None:
        self.processo.parar(timeout=5)
        self.banco.apagar()


def pasta_do_par() -> Path:
    return Path(os.environ.get("BENCH_PEER_DIR") or PASTA_PADRAO / "express-seed")


def garantir_node() -> None:
    """node and npm; installs Debian's packages when either is missing."""
    if shutil.which("node") and shutil.which("npm"):
        return
    print("# node/npm not found: apt-get install -y nodejs npm", flush=True)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=False)
    subprocess.run(
        [*sudo, "apt-get", "install", "-y", "-qq", "nodejs", "npm"], check=True
    )
    if not (shutil.which("node") and shutil.which("npm")):
        raise RuntimeError("node/npm still missing after apt-get install")


def iniciar_par(banco: Banco, n_tenants: int) -> Par:
    """Starts the peer through its start.sh with `n_tenants` tokens.

    Its database is named after ours (`<bench database>_peer`), so two
    engineers' benches on one server never share it, and is dropped by
    `Par.parar`.
    """
    garantir_node()
    pasta = pasta_do_par()
    script = pasta / "start.sh"
    if not script.exists():
        raise RuntimeError(
            f"the seed peer is not at {pasta} (BENCH_PEER_DIR, or PEER=0 to skip it)"
        )
    trabalho = SAIDA / "express-seed"
    # start.sh copies the peer over this folder; a previous run's
    # node_modules would make `npm ci` remove it first anyway.
    shutil.rmtree(trabalho, ignore_errors=True)
    trabalho.mkdir(parents=True)
    porta = porta_livre()
    banco_par = Banco(
        host=banco.host,
        porta=banco.porta,
        usuario=banco.usuario,
        senha=banco.senha,
        nome=f"{banco.nome}_peer",
    )
    tokens = SAIDA / "peer-tokens.txt"
    env = ambiente(
        PORT=str(porta),
        PEER_DB=banco_par.nome,
        PEER_WORKDIR=str(trabalho),
        PGHOST=banco.host,
        PGPORT=str(banco.porta),
        PGUSER=banco.usuario,
    )
    if banco.senha:
        env["PGPASSWORD"] = banco.senha
    t0 = time.monotonic()
    processo = Processo(
        "express-seed",
        ["bash", str(script), str(tokens), str(n_tenants)],
        env,
        SAIDA / "peer-start.log",
    )
    codigo = processo.popen.wait(300)
    if codigo != 0:
        texto = processo.texto_do_log()
        processo.parar()
        raise RuntimeError(f"the seed peer did not start ({codigo}):\n{texto}")
    linhas = tokens.read_text().split("\n")
    lista = [linha.split()[0] for linha in linhas if linha.strip()]
    nota(
        f"seed peer (Express {_versao(trabalho, 'express')}, pg"
        f" {_versao(trabalho, 'pg')}, node {_node()}) on port {porta},"
        f" database {banco_par.nome}, {len(lista)} tokens, ready in"
        f" {time.monotonic() - t0:.0f}s"
    )
    return Par(processo, f"http://127.0.0.1:{porta}", banco_par, lista)


def _versao(trabalho: Path, pacote: str) -> str:
    import json

    try:
        dados = json.loads(
            (trabalho / "node_modules" / pacote / "package.json").read_text()
        )
    except (OSError, ValueError):
        return "?"
    return str(dados.get("version", "?"))


def _node() -> str:
    saida = subprocess.run(
        ["node", "--version"], capture_output=True, text=True, check=False
    )
    return saida.stdout.strip() or "?"
