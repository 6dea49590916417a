"""The monthly close, seed 004's own example: for one month, per store, its
revenue, returns, commissions and closing stock value, each with its change
from the month before.

Three chunks, one per source of figures (sales, returns, stock), each one
statement over both months that aggregates per store in SQL, with a totals
row (GROUPING SETS) and the changes computed there too; `combinar` only
puts each store's figures side by side. The stores are listed once, by
`partes`, so every chunk reports the same ones (and a retry the same again).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from django.db.backends.utils import CursorWrapper
from rest_framework import serializers

from relatorios.models.erp import (
    Devolucao,
    Loja,
    MovimentoEstoque,
    Produto,
    Venda,
    Vendedor,
)
from relatorios.tipos.base import (
    Contexto,
    Parcial,
    Parte,
    TipoRelatorio,
    dinheiro,
    texto,
)
from relatorios.tipos.colunas import LOJA, LOJA_NOME, Coluna, Grafico
from relatorios.tipos.normalizacao import ErroDeParametro
from relatorios.tipos.sql import filtro_lojas, limites_do_dia

_MUDANCA = (
    "(mês − mês anterior) / mês anterior, com 4 casas: `0.1234` é +12,34%; "
    "null quando o mês anterior é zero."
)


def _variacao() -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=20,
        decimal_places=4,
        coerce_to_string=True,
        allow_null=True,
        help_text=_MUDANCA,
    )


class TotaisFechamentoSerializer(serializers.Serializer):
    receita = dinheiro("Vendas do mês, pela data e hora da venda.")
    variacao_receita = _variacao()
    devolucoes = dinheiro("Valor devolvido no mês, pela data e hora da devolução.")
    variacao_devolucoes = _variacao()
    comissoes = dinheiro(
        "Soma, por vendedor, de round(receita do vendedor na loja × taxa, 2): "
        "sobre as vendas, como em `comissoes`."
    )
    variacao_comissoes = _variacao()
    estoque_final = dinheiro(
        "Saldo de cada produto no último dia do mês × o seu preço."
    )
    variacao_estoque_final = _variacao()


class _LojaSerializer(serializers.Serializer):
    loja = serializers.CharField()
    loja_nome = serializers.CharField()


class LinhaFechamentoSerializer(_LojaSerializer, TotaisFechamentoSerializer):
    # The store, then the same figures as the totals (DRF orders the fields
    # of several bases by the bases' order).
    pass


class ResultadoFechamentoSerializer(serializers.Serializer):
    mes = serializers.CharField(help_text="O mês fechado: `2026-01`.")
    mes_anterior = serializers.CharField(help_text="O mês da comparação: `2025-12`.")
    linhas = LinhaFechamentoSerializer(many=True)
    totais = TotaisFechamentoSerializer()


def _mudanca(figura: str, titulo: str) -> Coluna:
    # The totals' change is not a sum of the stores' changes: the .xlsx's
    # Total row shows the result's own.
    return Coluna(
        f"variacao_{figura}",
        f"{titulo} × mês anterior",
        "percentual",
        total="valor",
        variacao=True,
    )


def _por_loja(fonte: str, figuras: tuple[str, ...]) -> str:
    """Each store of the chunk (and the totals row, `codigo` NULL) with the
    month's and the month before's sum of each figure of `fonte` (rows of
    `loja_id`, `<figura>`, `<figura>_anterior`), and the change between."""
    # 0.00, not 0: a store with nothing to sum still shows cents.
    somas = ",\n".join(
        f"coalesce(sum(f.{n}), 0.00) AS {n}, "
        f"coalesce(sum(f.{n}_anterior), 0.00) AS {n}_ant"
        for n in figuras
    )
    saida = ",\n".join(
        f"{n}, round(({n} - {n}_ant) / nullif({n}_ant, 0), 4)" for n in figuras
    )
    return f"""
        WITH fonte AS ({fonte})
        SELECT codigo, nome, {saida}
          FROM (SELECT l.codigo, l.nome, {somas}
                  FROM erp_lojas l
                  LEFT JOIN fonte f ON f.loja_id = l.id
                 WHERE l.tenant_id = %(tenant)s AND l.id = ANY(%(lojas)s)
                 GROUP BY GROUPING SETS ((l.codigo, l.nome), ())) AS t
         ORDER BY codigo NULLS LAST
    """


# One chunk per source: its figures and the rows they are summed from.
# Commissions are computed as `comissoes` computes them, per seller and
# store and month, rounded to cents, on the sales (not net of returns).
_FIGURAS: dict[str, tuple[tuple[str, ...], str]] = {
    "vendas": (
        ("receita", "comissoes"),
        """
        SELECT v.loja_id,
               sum(v.valor) FILTER (WHERE v.data_hora >= %(de)s) AS receita,
               sum(v.valor) FILTER (WHERE v.data_hora < %(de)s) AS receita_anterior,
               round(coalesce(sum(v.valor) FILTER (WHERE v.data_hora >= %(de)s), 0)
                     * ve.taxa_comissao, 2) AS comissoes,
               round(coalesce(sum(v.valor) FILTER (WHERE v.data_hora < %(de)s), 0)
                     * ve.taxa_comissao, 2) AS comissoes_anterior
          FROM erp_vendas v
          JOIN erp_vendedores ve ON ve.id = v.vendedor_id
         WHERE v.tenant_id = %(tenant)s
           AND v.data_hora >= %(de_anterior)s AND v.data_hora < %(ate)s
           AND v.loja_id = ANY(%(lojas)s)
         GROUP BY v.loja_id, ve.id
        """,
    ),
    "devolucoes": (
        ("devolucoes",),
        """
        SELECT d.loja_id,
               sum(d.valor) FILTER (WHERE d.data_hora >= %(de)s) AS devolucoes,
               sum(d.valor) FILTER (WHERE d.data_hora < %(de)s)
                   AS devolucoes_anterior
          FROM erp_devolucoes d
         WHERE d.tenant_id = %(tenant)s
           AND d.data_hora >= %(de_anterior)s AND d.data_hora < %(ate)s
           AND d.loja_id = ANY(%(lojas)s)
         GROUP BY d.loja_id
        """,
    ),
    # Each product's balance at the end of each month, times its price.
    "estoque": (
        ("estoque_final",),
        """
        SELECT s.loja_id,
               sum(s.saldo * p.preco) AS estoque_final,
               sum(s.saldo_anterior * p.preco) AS estoque_final_anterior
          FROM (SELECT m.loja_id, m.produto_id,
                       sum(m.quantidade) AS saldo,
                       sum(m.quantidade) FILTER (WHERE m.data < %(inicio)s)
                           AS saldo_anterior
                  FROM erp_movimentos_estoque m
                 WHERE m.tenant_id = %(tenant)s
                   AND m.loja_id = ANY(%(lojas)s)
                   AND m.data <= %(fim)s
                 GROUP BY m.loja_id, m.produto_id) AS s
          JOIN erp_produtos p ON p.id = s.produto_id
         GROUP BY s.loja_id
        """,
    ),
}

# Sample returns, for gerar_dados: about 3% of the sales lines come back
# (some of their units, in 1 to 20 days, to the store that sold them). The
# seeded random() must meet the sales in the order they were generated,
# whatever the plan: MATERIALIZED keeps PostgreSQL from pushing the draw
# below the sort, into a scan in index or heap order.
_DEVOLUCOES_DE_EXEMPLO = """
    WITH vendas AS MATERIALIZED (
        SELECT * FROM erp_vendas WHERE tenant_id = %s ORDER BY id
    ), devolvidas AS (
        SELECT v.*, 1 + floor(random() * v.quantidade)::int AS q
          FROM vendas v
         WHERE random() < 0.03
    )
    INSERT INTO erp_devolucoes
           (tenant_id, loja_id, venda_id, data_hora, quantidade, valor)
    SELECT tenant_id, loja_id, id,
           data_hora + make_interval(days => 1 + floor(random() * 20)::int,
                                     hours => floor(random() * 6)::int),
           q, round(valor * q / quantidade, 2)
      FROM devolvidas
"""


_EXEMPLO = {
    "receita": "2001534.67",
    "variacao_receita": "0.0523",
    "devolucoes": "48211.30",
    "variacao_devolucoes": "-0.1104",
    "comissoes": "70053.71",
    "variacao_comissoes": "0.0518",
    "estoque_final": "1523400.90",
    "variacao_estoque_final": "-0.0210",
}


class FechamentoMensal(TipoRelatorio):
    """One month per store: revenue, returns, commissions, closing stock
    value, each against the month before."""

    tipo = "fechamento"
    titulo = "Fechamento mensal por loja"
    usa_agrupar = False
    colunas = (
        LOJA,
        LOJA_NOME,
        Coluna("receita", "Receita (R$)", "dinheiro"),
        _mudanca("receita", "Receita"),
        Coluna("devolucoes", "Devoluções (R$)", "dinheiro"),
        _mudanca("devolucoes", "Devoluções"),
        Coluna("comissoes", "Comissões (R$)", "dinheiro"),
        _mudanca("comissoes", "Comissões"),
        Coluna("estoque_final", "Estoque final (R$)", "dinheiro"),
        _mudanca("estoque_final", "Estoque"),
    )
    grafico = Grafico(
        "barra",
        "Receita do mês por loja",
        eixo="loja",
        rotulo="loja_nome",
        valor="receita",
        ordem="maiores",
        limite=20,
    )
    resultado = ResultadoFechamentoSerializer
    exemplo = {
        "mes": "2026-01",
        "mes_anterior": "2025-12",
        # One store: its figures are the totals.
        "linhas": [{"loja": "L001", "loja_nome": "Loja Centro 001", **_EXEMPLO}],
        "totais": _EXEMPLO,
    }
    tabelas_erp = (Loja, Venda, Vendedor, Devolucao, MovimentoEstoque, Produto)
    # Its chunks are figures of the whole month and the one before, and the
    # stock's a snapshot of all history: not composed from their own bounds.
    partes_reutilizaveis = False

    def normalizar(self, brutos: Any) -> dict[str, Any]:
        """A close is of one whole month: `inicio` its first day, `fim` its last."""
        params = super().normalizar(brutos)
        inicio = date.fromisoformat(params["inicio"])
        if inicio.day != 1:
            raise ErroDeParametro(
                "inicio",
                # The message is read on the pages, beside the field: in
                # words, not the parameter's name (the API's `campo` names it).
                "o fechamento é de um mês inteiro: comece no dia 1º do mês",
            )
        ultimo = _ultimo_dia(inicio)
        if params["fim"] != ultimo.isoformat():
            raise ErroDeParametro(
                "fim",
                "o fechamento é de um mês inteiro: termine em "
                f"{ultimo:%d/%m/%Y}, o último dia do mês do início",
            )
        return params

    def periodo_sugerido(self, hoje: date) -> tuple[date, date]:
        # The month that last closed.
        fim = hoje.replace(day=1) - timedelta(days=1)
        return fim.replace(day=1), fim

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        cursor.execute(
            f"""
            SELECT l.id FROM erp_lojas l
             WHERE l.tenant_id = %(tenant)s {filtro_lojas(params)}
             ORDER BY l.codigo
            """,
            {"tenant": ctx.tenant_id, "lojas": params["lojas"]},
        )
        lojas = [id_ for (id_,) in cursor.fetchall()]
        return [{"figuras": nome, "lojas": lojas} for nome in _FIGURAS]

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        figuras, fonte = _FIGURAS[parte["figuras"]]
        inicio = date.fromisoformat(params["inicio"])
        anterior = _mes_anterior(inicio)
        cursor.execute(
            _por_loja(fonte, figuras),
            {
                "tenant": ctx.tenant_id,
                "lojas": parte["lojas"],
                "inicio": params["inicio"],
                "fim": params["fim"],
                **limites_do_dia(params["inicio"], params["fim"], ctx.fuso_horario),
                "de_anterior": limites_do_dia(
                    anterior.isoformat(), anterior.isoformat(), ctx.fuso_horario
                )["de"],
            },
        )
        linhas = []
        totais: dict[str, Any] = {}
        for codigo, nome, *valores in cursor.fetchall():
            pares = zip(valores[::2], valores[1::2], strict=True)
            numeros: dict[str, Any] = {}
            for figura, (valor, variacao) in zip(figuras, pares, strict=True):
                numeros[figura] = texto(valor)
                # None: no change from a month of zero.
                numeros[f"variacao_{figura}"] = (
                    None if variacao is None else texto(variacao)
                )
            if codigo is None:
                totais = numeros
                continue
            linhas.append({"loja": codigo, "loja_nome": nome, **numeros})
        return {"linhas": linhas, "totais": totais}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        # Each chunk has every store's figures of one source: side by side.
        por_loja: dict[str, dict[str, Any]] = {}
        totais: dict[str, Any] = {}
        for parcial in parciais:
            for linha in parcial["linhas"]:
                por_loja.setdefault(linha["loja"], {}).update(linha)
            totais.update(parcial["totais"])
        inicio = date.fromisoformat(params["inicio"])
        return {
            "mes": inicio.strftime("%Y-%m"),
            "mes_anterior": _mes_anterior(inicio).strftime("%Y-%m"),
            "linhas": list(por_loja.values()),
            "totais": totais,
        }

    def dados_de_exemplo(self, cursor: CursorWrapper, tenant_id: int) -> None:
        cursor.execute(_DEVOLUCOES_DE_EXEMPLO, [tenant_id])


def _ultimo_dia(inicio: date) -> date:
    return (inicio.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(
        days=1
    )


def _mes_anterior(inicio: date) -> date:
    return (inicio.replace(day=1) - timedelta(days=1)).replace(day=1)
