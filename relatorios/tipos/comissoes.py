from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.backends.utils import CursorWrapper
from rest_framework import serializers

from relatorios.models.erp import Loja, Venda, Vendedor
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
from relatorios.tipos.colunas import PERIODO, Coluna, Grafico
from relatorios.tipos.sql import (
    FORMATO_PERIODO,
    UNIDADE,
    filtro_lojas,
    limites_do_dia,
)


class LinhaComissoesSerializer(serializers.Serializer):
    periodo = serializers.CharField()
    vendedor_id = serializers.IntegerField()
    vendedor = serializers.CharField()
    taxa = serializers.DecimalField(
        max_digits=6, decimal_places=4, coerce_to_string=True
    )
    receita = dinheiro()
    comissao = dinheiro("round(receita × taxa, 2)")


class TotaisComissoesSerializer(serializers.Serializer):
    receita = dinheiro()
    comissao = dinheiro("A soma das linhas.")


class ResultadoComissoesSerializer(serializers.Serializer):
    agrupar = serializers.ChoiceField(choices=["dia", "mes"])
    linhas = LinhaComissoesSerializer(many=True)
    totais = TotaisComissoesSerializer()


class Comissoes(TipoRelatorio):
    """Revenue and commission (revenue x the seller's rate) per period and seller."""

    tipo = "comissoes"
    titulo = "Comissões por período e vendedor"
    colunas = (
        PERIODO,
        Coluna("vendedor_id", "Código do vendedor", "inteiro"),
        Coluna("vendedor", "Vendedor", largura=28),
        Coluna("taxa", "Taxa", "decimal"),
        Coluna("receita", "Receita (R$)", "dinheiro"),
        Coluna("comissao", "Comissão (R$)", "dinheiro"),
    )
    grafico = Grafico(
        "barra",
        "Comissão por vendedor",
        eixo="vendedor_id",
        rotulo="vendedor",
        valor="comissao",
        ordem="maiores",
        limite=20,
    )
    resultado = ResultadoComissoesSerializer
    exemplo = {
        "agrupar": "dia",
        "linhas": [
            {
                "periodo": "2026-01-01",
                "vendedor_id": 3,
                "vendedor": "Vendedor L001-3",
                "taxa": "0.0350",
                "receita": "13544.94",
                "comissao": "474.07",
            }
        ],
        "totais": {"receita": "13544.94", "comissao": "474.07"},
    }
    tabelas_erp = (Venda, Vendedor, Loja)

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
        # The commission is rounded to cents per seller and period, and the
        # total is the sum of those rounded amounts, so the table adds up.
        cursor.execute(
            f"""
            WITH linhas AS (
                SELECT to_char(date_trunc(%(agrupar)s,
                                          v.data_hora AT TIME ZONE %(fuso)s),
                               %(formato)s) AS periodo,
                       ve.id AS vendedor_id, ve.nome, ve.taxa_comissao AS taxa,
                       sum(v.valor) AS receita
                  FROM erp_vendas v
                  -- The tenant's own sellers and stores only: a reused chunk
                  -- is valid while the tenant's versions hold (jobs/reuso.py).
                  JOIN erp_vendedores ve
                    ON ve.id = v.vendedor_id AND ve.tenant_id = v.tenant_id
                  JOIN erp_lojas l ON l.id = v.loja_id AND l.tenant_id = v.tenant_id
                 WHERE v.tenant_id = %(tenant)s
                   AND v.data_hora >= %(de)s::timestamptz
                   AND v.data_hora < %(ate)s::timestamptz
                   {filtro_lojas(params)}
                 GROUP BY 1, ve.id, ve.nome, ve.taxa_comissao
            ), com_comissao AS (
                SELECT *, round(receita * taxa, 2) AS comissao FROM linhas
            )
            SELECT periodo, vendedor_id, nome, taxa, receita, comissao
              FROM com_comissao
             UNION ALL
            SELECT NULL, NULL, NULL, NULL,
                   coalesce(sum(receita), 0), coalesce(sum(comissao), 0)
              FROM com_comissao
             ORDER BY 1 NULLS LAST, 3, 2
            """,
            {
                "agrupar": UNIDADE[params["agrupar"]],
                "formato": FORMATO_PERIODO[params["agrupar"]],
                "fuso": ctx.fuso_horario,
                "tenant": ctx.tenant_id,
                **limites_do_dia(parte["inicio"], parte["fim"], ctx.fuso_horario),
                "lojas": params["lojas"],
            },
        )
        linhas = []
        totais = {"receita": "0", "comissao": "0"}
        for periodo, vendedor_id, nome, taxa, receita, comissao in cursor.fetchall():
            if periodo is None:
                totais = {"receita": texto(receita), "comissao": texto(comissao)}
                continue
            linhas.append(
                {
                    "periodo": periodo,
                    "vendedor_id": vendedor_id,
                    "vendedor": nome,
                    "taxa": texto(taxa),
                    "receita": texto(receita),
                    "comissao": texto(comissao),
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
                "receita": texto(somar(parciais, "receita")),
                "comissao": texto(somar(parciais, "comissao")),
            },
        }
