from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.backends.utils import CursorWrapper
from rest_framework import serializers

from relatorios.models.erp import Loja, MovimentoEstoque, Produto
from relatorios.tipos.base import Contexto, Parcial, Parte, TipoRelatorio, somar
from relatorios.tipos.colunas import LOJA, LOJA_NOME, Coluna, Grafico
from relatorios.tipos.sql import filtro_lojas

CAMPOS = ("saldo_inicial", "entradas", "saidas", "saldo_final")


class LinhaEstoqueSerializer(serializers.Serializer):
    loja = serializers.CharField()
    loja_nome = serializers.CharField()
    sku = serializers.CharField()
    produto = serializers.CharField()
    saldo_inicial = serializers.IntegerField()
    entradas = serializers.IntegerField()
    saidas = serializers.IntegerField()
    saldo_final = serializers.IntegerField()


class TotaisEstoqueSerializer(serializers.Serializer):
    saldo_inicial = serializers.IntegerField()
    entradas = serializers.IntegerField()
    saidas = serializers.IntegerField()
    saldo_final = serializers.IntegerField()


class ResultadoEstoqueSerializer(serializers.Serializer):
    linhas = LinhaEstoqueSerializer(many=True)
    totais = TotaisEstoqueSerializer()


class Estoque(TipoRelatorio):
    """Per store and product: opening balance, inflow, outflow, closing balance."""

    tipo = "estoque"
    titulo = "Estoque por loja e produto"
    usa_agrupar = False
    colunas = (
        LOJA,
        LOJA_NOME,
        Coluna("sku", "SKU"),
        Coluna("produto", "Produto", largura=28),
        Coluna("saldo_inicial", "Saldo inicial", "inteiro"),
        Coluna("entradas", "Entradas", "inteiro"),
        Coluna("saidas", "Saídas", "inteiro"),
        Coluna("saldo_final", "Saldo final", "inteiro"),
    )
    grafico = Grafico(
        "barra",
        "Produtos com menor saldo final",
        eixo="sku",
        rotulo="produto",
        valor="saldo_final",
        ordem="menores",
        limite=15,
    )
    resultado = ResultadoEstoqueSerializer
    exemplo = {
        "linhas": [
            {
                "loja": "L001",
                "loja_nome": "Loja Centro 001",
                "sku": "SKU00001",
                "produto": "Camiseta modelo 1",
                "saldo_inicial": 15160,
                "entradas": 2225,
                "saidas": 624,
                "saldo_final": 16761,
            }
        ],
        "totais": {
            "saldo_inicial": 15160,
            "entradas": 2225,
            "saidas": 624,
            "saldo_final": 16761,
        },
    }
    tabelas_erp = (MovimentoEstoque, Loja, Produto)
    # A balance is a snapshot of every movement up to the date: not a sum
    # of chunks of a range.
    partes_reutilizaveis = False

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        # One chunk per store: each reads only its store's movements through
        # the (tenant_id, loja_id, data) index.
        cursor.execute(
            f"""
            SELECT l.id, l.codigo FROM erp_lojas l
             WHERE l.tenant_id = %(tenant)s {filtro_lojas(params)}
             ORDER BY l.codigo
            """,
            {"tenant": ctx.tenant_id, "lojas": params["lojas"]},
        )
        return [{"loja_id": id_, "loja": codigo} for id_, codigo in cursor.fetchall()]

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        cursor.execute(
            """
            SELECT l.codigo, l.nome, p.sku, p.nome,
                   coalesce(sum(m.quantidade)
                            FILTER (WHERE m.data < %(inicio)s), 0),
                   coalesce(sum(m.quantidade)
                            FILTER (WHERE m.data >= %(inicio)s
                                      AND m.quantidade > 0), 0),
                   coalesce(-sum(m.quantidade)
                            FILTER (WHERE m.data >= %(inicio)s
                                      AND m.quantidade < 0), 0),
                   coalesce(sum(m.quantidade), 0)
              FROM erp_movimentos_estoque m
              JOIN erp_lojas l ON l.id = m.loja_id
              JOIN erp_produtos p ON p.id = m.produto_id
             WHERE m.tenant_id = %(tenant)s
               AND m.loja_id = %(loja_id)s
               AND m.data <= %(fim)s
             GROUP BY GROUPING SETS ((l.codigo, l.nome, p.sku, p.nome), ())
             ORDER BY l.codigo NULLS LAST, p.sku
            """,
            {
                "tenant": ctx.tenant_id,
                "loja_id": parte["loja_id"],
                "inicio": params["inicio"],
                "fim": params["fim"],
            },
        )
        linhas = []
        totais = dict.fromkeys(CAMPOS, 0)
        for codigo, loja_nome, sku, produto, *saldos in cursor.fetchall():
            valores = dict(zip(CAMPOS, saldos, strict=True))
            if codigo is None:
                totais = valores
                continue
            linhas.append(
                {
                    "loja": codigo,
                    "loja_nome": loja_nome,
                    "sku": sku,
                    "produto": produto,
                    **valores,
                }
            )
        return {"linhas": linhas, "totais": totais}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {
            "linhas": [linha for p in parciais for linha in p["linhas"]],
            "totais": {campo: somar(parciais, campo, int) for campo in CAMPOS},
        }
