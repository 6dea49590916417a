"""Report types and their presentation write text and files; only the
audiences (api/, paginas/, admin/) turn them into HTTP responses."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RAIZ = Path(__file__).resolve().parent.parent.parent
ABAIXO_DAS_AUDIENCIAS = ("tipos", "apresentacao")


def _importacoes_de_http(arquivo: Path) -> list[str]:
    achadas = []
    for no in ast.walk(ast.parse(arquivo.read_text(), str(arquivo))):
        if isinstance(no, ast.ImportFrom) and no.module:
            modulos = [no.module] + [f"{no.module}.{a.name}" for a in no.names]
        elif isinstance(no, ast.Import):
            modulos = [a.name for a in no.names]
        else:
            continue
        if any(m == "django.http" or m.startswith("django.http.") for m in modulos):
            achadas.append(f"{arquivo.relative_to(RAIZ)}:{no.lineno}")
    return achadas


def _fontes() -> list[Path]:
    return sorted(
        p
        for pasta in ABAIXO_DAS_AUDIENCIAS
        for p in (RAIZ / "relatorios" / pasta).rglob("*.py")
    )


def test_ha_fontes_para_verificar() -> None:
    assert len(_fontes()) > 10


@pytest.mark.parametrize("arquivo", _fontes(), ids=lambda p: str(p.relative_to(RAIZ)))
def test_tipos_e_apresentacao_nao_montam_respostas_http(arquivo: Path) -> None:
    assert _importacoes_de_http(arquivo) == []


@pytest.mark.parametrize(
    "codigo",
    [
        "from django.http import FileResponse\n",
        "from django import http\n",
        "import django.http.response\n",
    ],
)
def test_a_verificacao_acha_uma_resposta_http(codigo: str) -> None:
    exemplo = RAIZ / "relatorios" / "apresentacao" / "_exemplo_de_teste.py"
    exemplo.write_text(codigo)
    try:
        assert _importacoes_de_http(exemplo) == [
            "relatorios/apresentacao/_exemplo_de_teste.py:1"
        ]
    finally:
        exemplo.unlink()
