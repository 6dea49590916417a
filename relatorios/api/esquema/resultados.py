"""The built-in report types' result shapes, and their README examples.

Documentation-only serializers: `jobs` gives each type's `200` its own
`resultado` from here.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


def _dinheiro(ajuda: str = "") -> serializers.DecimalField:
    # Money travels as a decimal string, never a float.
    return serializers.DecimalField(
        max_digits=20, decimal_places=2, coerce_to_string=True, help_text=ajuda
    )


class LinhaVendasSerializer(serializers.Serializer):
    periodo = serializers.CharField(help_text="`2026-01-05` (dia) ou `2026-01` (mês).")
    loja = serializers.CharField()
    loja_nome = serializers.CharField()
    vendas = serializers.IntegerField()
    quantidade = serializers.IntegerField()
    receita = _dinheiro()


class TotaisVendasSerializer(serializers.Serializer):
    vendas = serializers.IntegerField()
    quantidade = serializers.IntegerField()
    receita = _dinheiro()


class ResultadoVendasSerializer(serializers.Serializer):
    agrupar = serializers.ChoiceField(choices=["dia", "mes"])
    linhas = LinhaVendasSerializer(many=True)
    totais = TotaisVendasSerializer()


class LinhaComissoesSerializer(serializers.Serializer):
    periodo = serializers.CharField()
    vendedor_id = serializers.IntegerField()
    vendedor = serializers.CharField()
    taxa = serializers.DecimalField(
        max_digits=6, decimal_places=4, coerce_to_string=True
    )
    receita = _dinheiro()
    comissao = _dinheiro("round(receita × taxa, 2)")


class TotaisComissoesSerializer(serializers.Serializer):
    receita = _dinheiro()
    comissao = _dinheiro("A soma das linhas.")


class ResultadoComissoesSerializer(serializers.Serializer):
    agrupar = serializers.ChoiceField(choices=["dia", "mes"])
    linhas = LinhaComissoesSerializer(many=True)
    totais = TotaisComissoesSerializer()


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


# The built-in types' result shapes and README examples. A type without an
# entry (RELATORIOS_TIPOS_EXTRAS) is documented with a free-form `resultado`.
RESULTADOS: dict[str, tuple[type[serializers.Serializer], dict[str, Any]]] = {
    "vendas": (
        ResultadoVendasSerializer,
        {
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
        },
    ),
    "comissoes": (
        ResultadoComissoesSerializer,
        {
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
        },
    ),
    "estoque": (
        ResultadoEstoqueSerializer,
        {
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
        },
    ),
}
