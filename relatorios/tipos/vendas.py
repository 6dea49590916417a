from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.backends.utils import CursorWrapper

from relatorios.tipos.base import (
    Contexto,
    Parcial,
    Parte,
    TipoRelatorio,
    meses,
    somar,
    texto,
)
from relatorios.tipos.sql import (
    FORMATO_PERIODO,
    UNIDADE,
    filtro_lojas,
    limites_do_dia,
)


class Vendas(TipoRelatorio):
    """Sales per period (day or month) and store: count, quantity, revenue."""

    tipo = "vendas"
    titulo = "Vendas por período e loja"

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
              JOIN erp_lojas l ON l.id = v.loja_id
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
