"""Where prometheus_client's multiprocess mode keeps one server's values.

Counters and histograms incremented in any process of a server (the web's
workers; a cluster's supervisor, pusher and workers) are files in one folder,
summed at scrape time. The folder must be set before prometheus_client is
imported (it picks its value class at import) and must start empty (values of
a previous run would be added to this one's), so the two entry points call
`preparar` first thing: config/servidor.py in the web's master before any
worker starts, and manage.py before Django loads any app when the command is `qcluster`.

One folder per server process: a web and a cluster on one host must not
share one, since each wipes its own at start. Without PROMETHEUS_MULTIPROC_DIR
the folder is private to this server (its pid in the name) and removed when
it exits. No Django here: this runs before settings exist.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

VARIAVEL = "PROMETHEUS_MULTIPROC_DIR"


def preparar(papel: str) -> tuple[Path, bool]:
    """Create and empty this server's folder and export it to its children.

    Returns the folder and whether it is private (ours to remove at exit).
    """
    dada = os.environ.get(VARIAVEL, "").strip()
    privada = not dada
    pasta = (
        Path(tempfile.gettempdir()) / "relatorios-metricas" / f"{papel}-{os.getpid()}"
        if privada
        else Path(dada)
    )
    pasta.mkdir(parents=True, exist_ok=True)
    for arquivo in pasta.glob("*.db"):
        arquivo.unlink(missing_ok=True)
    os.environ[VARIAVEL] = str(pasta)
    return pasta, privada


def remover(pasta: Path) -> None:
    shutil.rmtree(pasta, ignore_errors=True)
