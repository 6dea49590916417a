from __future__ import annotations

import re
from pathlib import Path

from relatorios.jobs import suporte

SUBMETER = (
    Path(__file__).resolve().parents[2]
    / "relatorios"
    / "banco"
    / "sql"
    / "relatorios_submeter.sql"
)


def _atribuicoes(texto: str) -> list[tuple[str, str]]:
    itens = [item.strip() for item in texto.split(",") if item.strip()]
    return [tuple(re.split(r"\s*=\s*", item, maxsplit=1)) for item in itens]  # type: ignore[misc]


def _set_do_recomeco_no_submit() -> list[tuple[str, str]]:
    sql = SUBMETER.read_text()
    achado = re.search(
        r"ON CONFLICT \(chave\) DO UPDATE\s+SET (.*?)\s+WHERE ", sql, re.S
    )
    assert achado is not None
    return [(c, v) for c, v in _atribuicoes(achado[1]) if not v.startswith("EXCLUDED.")]


def test_rerun_do_suporte_esquece_o_mesmo_que_o_recomeco_do_submit() -> None:
    assert _atribuicoes(suporte.RECOMECO) == _set_do_recomeco_no_submit()


def test_recomeco_zera_o_estado_do_job() -> None:
    colunas = dict(_atribuicoes(suporte.RECOMECO))
    assert colunas["status"] == "'pendente'"
    assert colunas["tentativas"] == "0"
    assert colunas["resultado"] == colunas["checkpoint"] == "NULL"
