from __future__ import annotations

from typing import Any

import pytest

from relatorios.tipos.normalizacao import ErroDeParametro, chave, normalizar

PADRAO = {"inicio": "2026-01-01", "fim": "2026-01-31"}


def norm(brutos: Any, **kwargs: Any) -> dict[str, Any]:
    return normalizar(brutos, periodo_max_anos=5, **kwargs)


@pytest.mark.parametrize(
    ("brutos", "esperado"),
    [
        (
            PADRAO,
            {
                "inicio": "2026-01-01",
                "fim": "2026-01-31",
                "agrupar": "dia",
                "lojas": [],
            },
        ),
        (
            {**PADRAO, "agrupar": "mes", "lojas": ["L2", "L1", "L2"]},
            {
                "inicio": "2026-01-01",
                "fim": "2026-01-31",
                "agrupar": "mes",
                "lojas": ["L1", "L2"],
            },
        ),
        # A JavaScript client serializing a date sends midnight UTC.
        (
            {"inicio": "2026-01-05T00:00:00.000Z", "fim": "2026-01-06T23:59:59Z"},
            {
                "inicio": "2026-01-05",
                "fim": "2026-01-06",
                "agrupar": "dia",
                "lojas": [],
            },
        ),
        # An offset is converted to UTC before the date is taken, as the seed does.
        (
            {"inicio": "2026-01-04T22:00:00-03:00", "fim": "2026-01-06T01:00:00+05:00"},
            {
                "inicio": "2026-01-05",
                "fim": "2026-01-05",
                "agrupar": "dia",
                "lojas": [],
            },
        ),
        (
            {**PADRAO, "lojas": [3, "1", 2]},
            {**PADRAO, "agrupar": "dia", "lojas": ["1", "2", "3"]},
        ),
        ({**PADRAO, "lojas": None}, {**PADRAO, "agrupar": "dia", "lojas": []}),
        ({**PADRAO, "agrupar": None}, {**PADRAO, "agrupar": "dia", "lojas": []}),
        ({**PADRAO, "lojas": [" L1 "]}, {**PADRAO, "agrupar": "dia", "lojas": ["L1"]}),
        (
            {"inicio": "2020-01-01", "fim": "2024-12-31"},
            {
                "inicio": "2020-01-01",
                "fim": "2024-12-31",
                "agrupar": "dia",
                "lojas": [],
            },
        ),
    ],
    ids=[
        "padroes-explicitos",
        "lojas-ordenadas-sem-repeticao",
        "datahora-utc-de-javascript",
        "datahora-com-fuso",
        "codigos-numericos-viram-texto",
        "lojas-null",
        "agrupar-null",
        "espacos-em-codigos",
        "cinco-anos-exatos",
    ],
)
def test_normaliza(brutos: dict[str, Any], esperado: dict[str, Any]) -> None:
    assert norm(brutos) == esperado


@pytest.mark.parametrize(
    ("brutos", "campo"),
    [
        ({"fim": "2026-01-31"}, "inicio"),
        ({"inicio": "2026-01-01"}, "fim"),
        ({"inicio": "", "fim": "2026-01-31"}, "inicio"),
        ({"inicio": "2026-02-30", "fim": "2026-03-01"}, "inicio"),
        ({"inicio": "01/02/2026", "fim": "2026-03-01"}, "inicio"),
        ({"inicio": 20260101, "fim": "2026-03-01"}, "inicio"),
        ({"inicio": "2026-01-01", "fim": ["2026-03-01"]}, "fim"),
        ({"inicio": "２０２６-01-01", "fim": "2026-03-01"}, "inicio"),
        ({"inicio": "2026-01-01T25:00:00Z", "fim": "2026-03-01"}, "inicio"),
        ({"inicio": "1899-12-31", "fim": "1900-01-01"}, "inicio"),
        ({"inicio": "2026-02-01", "fim": "2026-01-31"}, "fim"),
        ({"inicio": "2020-01-01", "fim": "2025-01-01"}, "fim"),
        ({**PADRAO, "agrupar": "semana"}, "agrupar"),
        ({**PADRAO, "agrupar": "Mes"}, "agrupar"),
        ({**PADRAO, "agrupar": 1}, "agrupar"),
        ({**PADRAO, "lojas": "L1"}, "lojas"),
        ({**PADRAO, "lojas": {"L1": True}}, "lojas"),
        ({**PADRAO, "lojas": [True]}, "lojas"),
        ({**PADRAO, "lojas": [1.5]}, "lojas"),
        ({**PADRAO, "lojas": [None]}, "lojas"),
        ({**PADRAO, "lojas": [""]}, "lojas"),
        ({**PADRAO, "lojas": ["L\x00"]}, "lojas"),
        ({**PADRAO, "lojas": ["L" * 33]}, "lojas"),
        ({**PADRAO, "loja": ["L1"]}, "loja"),
        (["2026-01-01"], "corpo"),
        ("2026-01-01", "corpo"),
        (None, "corpo"),
    ],
)
def test_rejeita_com_o_nome_do_campo(brutos: Any, campo: str) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        norm(brutos)
    assert erro.value.campo == campo
    assert erro.value.mensagem


def test_lojas_ausentes_e_vazias_dao_a_mesma_chave() -> None:
    assert chave(1, "vendas", norm(PADRAO)) == chave(
        1, "vendas", norm({**PADRAO, "lojas": []})
    )


def test_variacoes_do_mesmo_pedido_dao_a_mesma_chave() -> None:
    a = norm({"inicio": "2026-01-01", "fim": "2026-01-31", "lojas": ["2", "1"]})
    b = norm(
        {
            "lojas": [1, "2", 2],
            "fim": "2026-01-31T12:00:00Z",
            "inicio": "2026-01-01T00:00:00.000Z",
            "agrupar": "dia",
        }
    )
    assert chave(7, "vendas", a) == chave(7, "vendas", b)


def test_tenant_e_tipo_fazem_parte_da_chave() -> None:
    params = norm(PADRAO)
    chaves = {
        chave(1, "vendas", params),
        chave(2, "vendas", params),
        chave(1, "comissoes", params),
    }
    assert len(chaves) == 3


def test_chave_dourada() -> None:
    # Pinned: a change here silently splits deduplication of every stored job.
    # sha256 of [42,"vendas",{"agrupar":"mes","fim":"2026-01-31",
    #                         "inicio":"2026-01-01","lojas":["L1","L2"]}]
    params = norm({**PADRAO, "agrupar": "mes", "lojas": ["L2", "L1"]})
    assert (
        chave(42, "vendas", params)
        == "72c2e815ec55285cc43bd9f767b260be11f6893d8dbc7c5a3e65bf53681954bc"
    )


def test_tipo_sem_agrupar_valida_mas_descarta_o_campo() -> None:
    assert "agrupar" not in norm({**PADRAO, "agrupar": "mes"}, usa_agrupar=False)
    with pytest.raises(ErroDeParametro):
        norm({**PADRAO, "agrupar": "semana"}, usa_agrupar=False)
