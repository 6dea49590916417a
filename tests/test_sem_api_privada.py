from __future__ import annotations

import ast
from pathlib import Path

import pytest

RAIZ = Path(__file__).resolve().parent.parent
NOSSOS = {"relatorios", "config", "tests", "bench"}


def _importacoes_privadas(arquivo: Path) -> list[str]:
    achadas = []
    for no in ast.walk(ast.parse(arquivo.read_text(), str(arquivo))):
        if isinstance(no, ast.ImportFrom) and no.module and no.level == 0:
            partes = no.module.split(".")
            if partes[0] in NOSSOS:
                continue
            modulos = [p for p in partes if p.startswith("_") and p != "__future__"]
            nomes = [a.name for a in no.names if a.name.startswith("_")]
            if modulos or nomes:
                achadas.append(f"{arquivo.relative_to(RAIZ)}:{no.lineno} {no.module}")
        elif isinstance(no, ast.Import):
            for alias in no.names:
                partes = alias.name.split(".")
                if partes[0] not in NOSSOS and any(p.startswith("_") for p in partes):
                    achadas.append(
                        f"{arquivo.relative_to(RAIZ)}:{no.lineno} {alias.name}"
                    )
    return achadas


def _fontes() -> list[Path]:
    return sorted(
        p
        for pasta in ("relatorios", "config")
        for p in (RAIZ / pasta).rglob("*.py")
        if "migrations" not in p.parts
    )


def test_ha_fontes_para_verificar() -> None:
    assert len(_fontes()) > 50


@pytest.mark.parametrize("arquivo", _fontes(), ids=lambda p: str(p.relative_to(RAIZ)))
def test_nenhum_modulo_importa_nome_privado_de_dependencia(arquivo: Path) -> None:
    assert _importacoes_privadas(arquivo) == []


def test_a_verificacao_acha_um_nome_privado() -> None:
    exemplo = RAIZ / "relatorios" / "_exemplo_de_teste.py"
    exemplo.write_text("from prometheus_client.exposition import _SilentHandler\n")
    try:
        assert _importacoes_privadas(exemplo) == [
            "relatorios/_exemplo_de_teste.py:1 prometheus_client.exposition"
        ]
    finally:
        exemplo.unlink()
