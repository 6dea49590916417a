"""Real PostgreSQL instances of a test's own: a primary and its streaming
replicas, made with initdb and pg_basebackup -R in a temporary folder.

The server binaries are the machine's PostgreSQL (`pg_config --bindir`); they
run as the `postgres` user, which PostgreSQL requires when the tests run as
root.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psycopg

from tests import processos


def _bin() -> Path:
    saida = subprocess.run(
        ["pg_config", "--bindir"], capture_output=True, text=True, check=True
    )
    return Path(saida.stdout.strip())


def _como_postgres(args: list[str]) -> subprocess.CompletedProcess[str]:
    prefixo = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run(
        prefixo + args, capture_output=True, text=True, check=True, timeout=120
    )


def pasta_temporaria(nome: str) -> Path:
    """A folder the postgres user owns (pytest's tmp_path is root's, mode 700)."""
    pasta = Path(f"/tmp/relatorios-{nome}-{os.getpid()}")
    shutil.rmtree(pasta, ignore_errors=True)
    pasta.mkdir(mode=0o700)
    if os.geteuid() == 0:
        dono = pwd.getpwnam("postgres")
        os.chown(pasta, dono.pw_uid, dono.pw_gid)
    return pasta


class Instancia:
    """One PostgreSQL server on 127.0.0.1 and a port of its own."""

    def __init__(self, pasta: Path, nome: str) -> None:
        self.dados = pasta / nome
        self.log = pasta / f"{nome}.log"
        self.pasta = pasta
        self.porta = processos.porta_livre()

    def url(self, banco: str = "relatorios") -> str:
        return f"postgres://postgres@127.0.0.1:{self.porta}/{banco}"

    def _configurar(self, **ajustes: str) -> None:
        linhas = [
            "listen_addresses = '127.0.0.1'",
            f"port = {self.porta}",
            f"unix_socket_directories = '{self.pasta}'",
            "fsync = off",
            "full_page_writes = off",
            "shared_buffers = '32MB'",
            "max_connections = 60",
            "hot_standby = on",
            "log_line_prefix = '%m [%p] '",
            *(f"{chave} = {valor}" for chave, valor in ajustes.items()),
        ]
        with (self.dados / "postgresql.conf").open("a") as conf:
            conf.write("\n" + "\n".join(linhas) + "\n")

    def criar_primario(self) -> Instancia:
        _como_postgres(
            [
                str(_bin() / "initdb"),
                "-D",
                str(self.dados),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ]
        )
        self._configurar(wal_level="replica", max_wal_senders="6")
        return self

    def criar_replica_de(self, primario: Instancia, **ajustes: str) -> Instancia:
        """pg_basebackup -R: a hot standby streaming from `primario`."""
        _como_postgres(
            [
                str(_bin() / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(primario.porta),
                "-U",
                "postgres",
                "-D",
                str(self.dados),
                "-R",
                "-X",
                "stream",
                "--checkpoint=fast",
                "--no-sync",
            ]
        )
        self._configurar(**ajustes)
        return self

    def ajustar(self, **ajustes: str) -> None:
        """Change settings that a reload applies (postgresql.auto.conf wins)."""
        arquivo = self.dados / "postgresql.auto.conf"
        linhas = [
            linha
            for linha in arquivo.read_text().splitlines()
            if linha.split("=")[0].strip() not in ajustes
        ]
        linhas += [f"{chave} = {valor}" for chave, valor in ajustes.items()]
        arquivo.write_text("\n".join(linhas) + "\n")
        _como_postgres([str(_bin() / "pg_ctl"), "-D", str(self.dados), "reload"])

    def iniciar(self) -> None:
        _como_postgres(
            [
                str(_bin() / "pg_ctl"),
                "-D",
                str(self.dados),
                "-l",
                str(self.log),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )

    def parar(self) -> None:
        if (self.dados / "postmaster.pid").exists():
            subprocess.run(
                (["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else [])
                + [
                    str(_bin() / "pg_ctl"),
                    "-D",
                    str(self.dados),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                ],
                capture_output=True,
                timeout=60,
            )

    def matar(self) -> None:
        """kill -9 of the postmaster and every backend it forked."""
        pid = int((self.dados / "postmaster.pid").read_text().split()[0])
        filhos = processos.filhos(pid)
        for alvo in [pid, *filhos]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(alvo, signal.SIGKILL)
        limite = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < limite:
            time.sleep(0.05)

    def promover(self) -> None:
        _como_postgres([str(_bin() / "pg_ctl"), "-D", str(self.dados), "-w", "promote"])

    def sql(
        self, consulta: str, params: object = None, banco: str = "relatorios"
    ) -> list:
        with psycopg.connect(self.url(banco), autocommit=True) as conexao:
            cursor = conexao.execute(consulta, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def texto_do_log(self, desde: int = 0) -> str:
        with self.log.open("rb") as arquivo:
            arquivo.seek(desde)
            return arquivo.read().decode(errors="replace")

    def tamanho_do_log(self) -> int:
        return self.log.stat().st_size
