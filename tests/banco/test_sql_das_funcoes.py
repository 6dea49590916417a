"""The PL/pgSQL functions in the database are the files in relatorios/banco/sql.

A freshly migrated database has each file's function, the newest migration
installing a function pins its file's current sha256 (an edit without a
migration fails here), and the released copies in historico/ are what their
names say. relatorios/banco/funcoes.py describes the workflow.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.migrations.loader import MigrationLoader

from relatorios.banco import funcoes

FONTES = sorted(funcoes.PASTA.glob("*.sql"))
RASCUNHO = "rascunho_das_funcoes"
# Everything pg_proc says defines a function, besides its name and schema.
DEFINICAO = """
    SELECT p.prosrc, pg_get_function_arguments(p.oid),
           pg_get_function_result(p.oid), l.lanname, p.provolatile,
           p.prosecdef, p.proisstrict, p.proparallel, p.proconfig
      FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace
      JOIN pg_language l ON l.oid = p.prolang
     WHERE n.nspname = %s AND p.proname = %s
"""
# A released copy's name: <function>.<the first hex digits of its sha256>.sql
COPIA = re.compile(
    rf"(?P<nome>[a-z_][a-z0-9_]*)\.(?P<prefixo>[0-9a-f]{{{funcoes.PREFIXO}}})"
    r"\.sql"
)


def pinos_mais_novos() -> dict[str, funcoes.InstalarFuncao]:
    """Each function's installing operation in the newest migration that has one."""
    grafo = MigrationLoader(None, ignore_no_migrations=True).graph
    (folha,) = grafo.leaf_nodes("relatorios")
    pinos: dict[str, funcoes.InstalarFuncao] = {}
    for chave in grafo.forwards_plan(folha):
        for operacao in grafo.nodes[chave].operations:
            if isinstance(operacao, funcoes.InstalarFuncao):
                pinos[operacao.nome] = operacao
    return pinos


def test_ha_fontes_de_funcoes() -> None:
    # A moved folder must not make the tests below vacuous.
    assert {f.stem for f in FONTES} >= {"relatorios_submeter", "relatorios_reivindicar"}


@pytest.mark.django_db
@pytest.mark.parametrize("fonte", FONTES, ids=lambda f: f.stem)
def test_funcao_no_banco_e_a_do_arquivo(fonte: Path) -> None:
    # The file runs as is into a scratch schema (first on the search path, so
    # its unqualified CREATE lands there and its types resolve as in public);
    # both definitions are then read under the same search path, so type
    # names print alike. The savepoint's rollback takes the schema away.
    nome = fonte.stem
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE SCHEMA {RASCUNHO}")
        cursor.execute(f"SET LOCAL search_path = {RASCUNHO}, public")
        cursor.execute(fonte.read_text())
        cursor.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = %s::regnamespace",
            [RASCUNHO],
        )
        criadas = [linha[0] for linha in cursor.fetchall()]
        cursor.execute(DEFINICAO, [RASCUNHO, nome])
        do_arquivo: list[tuple[Any, ...]] = cursor.fetchall()
        cursor.execute(DEFINICAO, ["public", nome])
        no_banco: list[tuple[Any, ...]] = cursor.fetchall()
        transaction.set_rollback(True)
    assert criadas == [nome], "the file must create exactly the function it names"
    assert len(no_banco) == 1, f"{nome}: expected one function in the database"
    assert no_banco == do_arquivo


def test_migracao_mais_nova_fixa_o_hash_atual_de_cada_arquivo() -> None:
    pinos = pinos_mais_novos()
    assert set(pinos) == {f.stem for f in FONTES}, (
        "every source needs a migration installing it, and every installed "
        "function a source"
    )
    for fonte in FONTES:
        atual = funcoes.resumo(fonte.read_bytes())
        assert pinos[fonte.stem].sha256 == atual, (
            f"{fonte.name} changed without a migration installing sha256 {atual}: "
            "see relatorios/banco/sql/README.md"
        )


def test_copias_do_historico_tem_o_hash_do_nome() -> None:
    historico = funcoes.PASTA / "historico"
    copias = sorted(historico.iterdir()) if historico.is_dir() else []
    for copia in copias:
        nome = COPIA.fullmatch(copia.name)
        assert nome, f"{copia.name}: not <function>.<{funcoes.PREFIXO} hex>.sql"
        prefixo = funcoes.resumo(copia.read_bytes())[: funcoes.PREFIXO]
        assert prefixo == nome["prefixo"], f"{copia.name} was edited after release"


def test_pino_antigo_le_a_copia_do_historico(tmp_path: Path) -> None:
    (tmp_path / "historico").mkdir()
    antiga = b"-- version 1\n"
    pino = funcoes.resumo(antiga)
    funcoes.no_historico("f", pino, tmp_path).write_bytes(antiga)
    (tmp_path / "f.sql").write_bytes(b"-- version 2\n")
    assert funcoes.ler("f", pino, tmp_path) == antiga.decode()
    assert funcoes.ler("f", funcoes.resumo(b"-- version 2\n"), tmp_path) == (
        "-- version 2\n"
    )


def test_pino_sem_fonte_com_aquele_hash_e_recusado(tmp_path: Path) -> None:
    (tmp_path / "f.sql").write_bytes(b"-- version 2\n")
    pino = funcoes.resumo(b"-- version 1\n")
    with pytest.raises(funcoes.FonteDaFuncaoAusente, match="is missing"):
        funcoes.ler("f", pino, tmp_path)
    (tmp_path / "historico").mkdir()
    funcoes.no_historico("f", pino, tmp_path).write_bytes(b"-- edited\n")
    with pytest.raises(funcoes.FonteDaFuncaoAusente, match="never edited"):
        funcoes.ler("f", pino, tmp_path)
