from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.backends.utils import CursorWrapper
from rest_framework import serializers

from relatorios.models.erp import Loja, Venda
from relatorios.tipos.base import (
    Contexto,
    Parcial,
    Parte,
    TipoRelatorio,
    dinheiro,
    meses,
    somar,
    texto,
)
from relatorios.tipos.colunas import LOJA, LOJA_NOME, PERIODO, Coluna, Grafico
from relatorios.tipos.sql import (
    FORMATO_PERIODO,
    UNIDADE,
    filtro_lojas,
    limites_do_dia,
)


class LinhaVendasSerializer(serializers.Serializer):
    periodo = serializers.CharField(help_text="`2026-01-05` (dia) ou `2026-01` (mês).")
    loja = serializers.CharField()
    loja_nome = serializers.CharField()
    vendas = serializers.IntegerField()
    quantidade = serializers.IntegerField()
    receita = dinheiro()


class TotaisVendasSerializer(serializers.Serializer):
    vendas = serializers.IntegerField()
    quantidade = serializers.IntegerField()
    receita = dinheiro()


class ResultadoVendasSerializer(serializers.Serializer):
    agrupar = serializers.ChoiceField(choices=["dia", "mes"])
    linhas = LinhaVendasSerializer(many=True)
    totais = TotaisVendasSerializer()


class Vendas(TipoRelatorio):
    """Sales per period (day or month) and store: count, quantity, revenue."""

    tipo = "vendas"
    titulo = "Vendas por período e loja"
    colunas = (
        PERIODO,
        LOJA,
        LOJA_NOME,
        Coluna("vendas", "Vendas", "inteiro"),
        Coluna("quantidade", "Quantidade", "inteiro"),
        Coluna("receita", "Receita (R$)", "dinheiro"),
    )
    grafico = Grafico(
        "linha",
        "Receita por período, por loja",
        eixo="periodo",
        valor="receita",
        serie="loja",
        rotulo_da_serie="loja_nome",
    )
    resultado = ResultadoVendasSerializer
    exemplo = {
        "agrupar": "mes",
        "linhas": [
            {
                "periodo": "2026-01",
                "loja": "L001",
                "loja_nome": "Loja Centro 001",
                "vendas": 10122,
                "quantidade": 21707,
                "receita": "2001534.67",
            }
        ],
        "totais": {"vendas": 10122, "quantidade": 21707, "receita": "2001534.67"},
    }
    tabelas_erp = (Venda, Loja)

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return meses(params["inicio"], params["fim"])

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        agrupar = params["agrupar"]
        # GROUPING SETS adds the chunk's totals row (periodo NULL) to the same scan.
        cursor.execute(
            f"""
            SELECT to_char(date_trunc(%(agrupar)s, v.data_hora AT TIME ZONE %(fuso)s),
                           %(formato)s) AS periodo,
                   l.codigo, l.nome,
                   count(*), coalesce(sum(v.quantidade), 0), coalesce(sum(v.valor), 0)
              FROM erp_vendas v
              -- The tenant's own stores only: a reused chunk is valid while
              -- the tenant's versions hold (relatorios/jobs/reuso.py).
              JOIN erp_lojas l ON l.id = v.loja_id AND l.tenant_id = v.tenant_id
             WHERE v.tenant_id = %(tenant)s
               AND v.data_hora >= %(de)s::timestamptz
               AND v.data_hora < %(ate)s::timestamptz
               {filtro_lojas(params)}
             GROUP BY GROUPING SETS ((1, l.codigo, l.nome), ())
             ORDER BY periodo NULLS LAST, l.codigo
            """,
            {
                "agrupar": UNIDADE[agrupar],
                "formato": FORMATO_PERIODO[agrupar],
                "fuso": ctx.fuso_horario,
                "tenant": ctx.tenant_id,
                **limites_do_dia(parte["inicio"], parte["fim"], ctx.fuso_horario),
                "lojas": params["lojas"],
            },
        )
        linhas = []
        totais = {"vendas": 0, "quantidade": 0, "receita": "0"}
        for periodo, codigo, nome, vendas, quantidade, receita in cursor.fetchall():
            if periodo is None:
                totais = {
                    "vendas": vendas,
                    "quantidade": quantidade,
                    "receita": texto(receita),
                }
                continue
            linhas.append(
                {
                    "periodo": periodo,
                    "loja": codigo,
                    "loja_nome": nome,
                    "vendas": vendas,
                    "quantidade": quantidade,
                    "receita": texto(receita),
                }
            )
        return {"linhas": linhas, "totais": totais}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {
            "agrupar": params["agrupar"],
            "linhas": [linha for p in parciais for linha in p["linhas"]],
            "totais": {
                "vendas": somar(parciais, "vendas", int),
                "quantidade": somar(parciais, "quantidade", int),
                "receita": texto(somar(parciais, "receita")),
            },
        }
