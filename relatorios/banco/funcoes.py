"""The database's PL/pgSQL functions: their sources, and how migrations install them.

Each function has one readable source, `sql/<nome>.sql`: a plain
`CREATE OR REPLACE FUNCTION` that psql can run. A migration installs it with
`instalar(nome, sha256, desfazer=...)`, pinning the bytes it means by their
sha256, so a migration keeps installing what it installed when it was
released even after the file moves on, without a second copy of the SQL in
the migration.

Changing a function later (also in sql/README.md):

1. Copy the current `sql/<nome>.sql`, byte for byte, to
   `sql/historico/<nome>.<first 12 hex of its sha256>.sql`. That copy is
   what the older migrations now read; it is never edited again.
2. Edit `sql/<nome>.sql`.
3. Add a migration with
   `instalar(nome, "<new sha256>", desfazer=ler(nome, "<previous sha256>"))`.
   CREATE OR REPLACE cannot change a function's arguments or result; when
   they change, the migration drops the old signature first.

tests/banco/test_sql_das_funcoes.py fails until all three are done: the function in
a freshly migrated database must be the file's, the newest migration must
pin the file's hash, and every historico copy must hash to its name.

Migrations import this module: keep its path and these names stable.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from django.db import migrations

PASTA = Path(__file__).resolve().parent / "sql"
# The released copies' names carry this many hex digits of their sha256.
PREFIXO = 12

_NOME = re.compile(r"[a-z_][a-z0-9_]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class FonteDaFuncaoAusente(Exception):
    """No source of the function hashes to the sha256 a migration pins."""


def resumo(conteudo: bytes) -> str:
    """The sha256 of a source's bytes, in lowercase hex, as migrations pin it."""
    return hashlib.sha256(conteudo).hexdigest()


def no_historico(nome: str, sha256: str, pasta: Path = PASTA) -> Path:
    """Where the released copy of `nome` with that sha256 lives (or would)."""
    return pasta / "historico" / f"{nome}.{sha256[:PREFIXO]}.sql"


def ler(nome: str, sha256: str, pasta: Path = PASTA) -> str:
    """The source of function `nome` whose bytes hash to `sha256`.

    That is `<pasta>/<nome>.sql` while it is unchanged, else its released
    copy in `<pasta>/historico/`. Raises FonteDaFuncaoAusente when neither
    has those bytes, naming the file expected: the migration must not
    install something else under that pin. ValueError on a malformed name or
    hash.
    """
    if not _NOME.fullmatch(nome):
        raise ValueError(f"not a function name: {nome!r}")
    if not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a lowercase hex sha256: {sha256!r}")
    atual = pasta / f"{nome}.sql"
    if atual.is_file():
        conteudo = atual.read_bytes()
        if resumo(conteudo) == sha256:
            return conteudo.decode()
    copia = no_historico(nome, sha256, pasta)
    if not copia.is_file():
        raise FonteDaFuncaoAusente(
            f"{atual} no longer has sha256 {sha256} and its released copy {copia} "
            "is missing: copy that version there (git log -p on the file finds "
            "it); see relatorios/banco/sql/README.md"
        )
    conteudo = copia.read_bytes()
    if resumo(conteudo) != sha256:
        raise FonteDaFuncaoAusente(
            f"{copia} has sha256 {resumo(conteudo)}, not {sha256}: released "
            "copies are never edited; restore it from git"
        )
    return conteudo.decode()


class InstalarFuncao(migrations.RunSQL):
    """RunSQL of a function's pinned source; it keeps the name and the pin.

    The test of the functions reads `nome` and `sha256` off the migration
    graph to find the newest pin of each function.
    """

    def __init__(self, nome: str, sha256: str, *, desfazer: str) -> None:
        super().__init__(ler(nome, sha256), desfazer)
        self.nome = nome
        self.sha256 = sha256
        self.desfazer = desfazer

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        # The constructor's arguments, not RunSQL's: what the writer needs to
        # rebuild this operation (squashmigrations).
        return (
            self.__class__.__name__,
            [self.nome, self.sha256],
            {"desfazer": self.desfazer},
        )

    def describe(self) -> str:
        return f"Install function {self.nome} (sha256 {self.sha256[:PREFIXO]})"


def instalar(nome: str, sha256: str, *, desfazer: str) -> InstalarFuncao:
    """The migration operation installing function `nome` as pinned by `sha256`.

    Forwards it runs the source `ler(nome, sha256)` returns (read when the
    migration is loaded, so a missing source fails loudly before anything
    runs); backwards it runs `desfazer`: a DROP FUNCTION for the first
    version, `ler(nome, <previous sha256>)` for a later one.
    """
    return InstalarFuncao(nome, sha256, desfazer=desfazer)
