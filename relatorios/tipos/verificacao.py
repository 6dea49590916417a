"""The system check that refuses a report type missing a part of its identity,
or whose parts disagree (`relatorios.E003`).

Every command that runs Django's checks, `qcluster` first among them, stops
on it: a worker never starts with a type whose page, file or contract would
break on its first result. What is checked, part by part:

- `tipo`, `titulo`, and the methods the worker calls;
- `colunas`: a non-empty tuple of `Coluna`, keys unique, known formats and
  totals;
- `grafico`: `None`, or a `Grafico` over the type's columns, its value numeric;
- `resultado`: a DRF serializer whose `linhas` hold exactly the columns' keys;
  `exemplo` is a valid `resultado`;
- `tabelas_erp`: ERP models (`erp_` tables, each row a tenant's);
- `partes_reutilizaveis`: a bool; when True every table in `tabelas_erp`
  carries the data-version triggers (`models.partes.TABELAS_VERSIONADAS`),
  or a stored chunk could outlive a write it never heard of.

Types are checked as classes, before the registry instantiates them, so a
missing name or method is a message rather than an exception at start.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from rest_framework import serializers

from relatorios import tipos
from relatorios.models.partes import TABELAS_VERSIONADAS
from relatorios.tipos.base import TipoRelatorio
from relatorios.tipos.colunas import FORMATOS, TOTAIS, Coluna, Grafico

PARTES = ("tipo", "titulo", "colunas", "grafico", "resultado", "exemplo", "tabelas_erp")


def verificar_tipos(**kwargs: Any) -> list[checks.CheckMessage]:
    try:
        classes = tipos.classes()
    except ImportError as erro:
        return [_erro(f"RELATORIOS_TIPOS_EXTRAS: {erro}", None)]
    mensagens: list[checks.CheckMessage] = []
    vistos: dict[str, type[TipoRelatorio]] = {}
    for cls in classes:
        for problema in problemas(cls):
            mensagens.append(_erro(f"{_nome(cls)}: {problema}", cls))
        tipo = getattr(cls, "tipo", None)
        if isinstance(tipo, str) and tipo in vistos:
            mensagens.append(
                _erro(f"{_nome(cls)}: {_nome(vistos[tipo])} has the same tipo", cls)
            )
        elif isinstance(tipo, str):
            vistos[tipo] = cls
    return mensagens


def problemas(cls: Any) -> list[str]:
    """What is wrong with one report type class (empty: nothing)."""
    if not (isinstance(cls, type) and issubclass(cls, TipoRelatorio)):
        return ["is not a TipoRelatorio subclass"]
    faltam = [parte for parte in PARTES if not hasattr(cls, parte)]
    if faltam:
        return [f"missing {', '.join(faltam)}"]
    if inspect.isabstract(cls):
        return [f"does not implement {', '.join(sorted(cls.__abstractmethods__))}"]
    achados = [
        f"{parte} must be a non-empty text"
        for parte in ("tipo", "titulo")
        if not isinstance(getattr(cls, parte), str) or not getattr(cls, parte)
    ]
    achados += _colunas(cls.colunas)
    if achados:
        return achados  # the other parts are checked against the columns
    campos = [coluna.campo for coluna in cls.colunas]
    return (
        _grafico(cls.grafico, cls.colunas)
        + _resultado(cls.resultado, cls.exemplo, campos)
        + _tabelas(cls.tabelas_erp)
        + _reuso(cls.partes_reutilizaveis, cls.tabelas_erp)
    )


def _colunas(colunas: Any) -> list[str]:
    if not isinstance(colunas, tuple) or not colunas:
        return ["colunas must be a non-empty tuple of Coluna"]
    if not all(isinstance(coluna, Coluna) for coluna in colunas):
        return ["colunas must hold Coluna only"]
    achados = []
    campos = [coluna.campo for coluna in colunas]
    repetidos = sorted({campo for campo in campos if campos.count(campo) > 1})
    if repetidos:
        achados.append(f"colunas repeat {', '.join(repetidos)}")
    for coluna in colunas:
        if coluna.formato not in FORMATOS:
            achados.append(f"column {coluna.campo}: unknown format {coluna.formato!r}")
        if coluna.total not in TOTAIS:
            achados.append(f"column {coluna.campo}: unknown total {coluna.total!r}")
        if coluna.largura is not None and not (
            isinstance(coluna.largura, int) and coluna.largura > 0
        ):
            achados.append(f"column {coluna.campo}: largura must be a positive int")
    return achados


def _grafico(grafico: Any, colunas: Sequence[Coluna]) -> list[str]:
    if grafico is None:
        return []
    if not isinstance(grafico, Grafico):
        return ["grafico must be a Grafico or None"]
    por_campo = {coluna.campo: coluna for coluna in colunas}
    achados = [
        f"grafico.{nome} {campo!r} is not a column"
        for nome in ("eixo", "valor", "serie", "rotulo", "rotulo_da_serie")
        if (campo := getattr(grafico, nome)) is not None and campo not in por_campo
    ]
    if grafico.valor in por_campo and not por_campo[grafico.valor].numerica:
        achados.append(f"grafico.valor {grafico.valor!r} is not a numeric column")
    return achados


def _resultado(resultado: Any, exemplo: Any, campos: list[str]) -> list[str]:
    if not (
        isinstance(resultado, type) and issubclass(resultado, serializers.Serializer)
    ):
        return ["resultado must be a Serializer class"]
    linhas = resultado().fields.get("linhas")
    if not isinstance(linhas, serializers.ListSerializer) or not isinstance(
        linhas.child, serializers.Serializer
    ):
        return ["resultado must have linhas = <a Serializer>(many=True)"]
    achados = []
    declarados = list(linhas.child.fields)
    faltam = [campo for campo in campos if campo not in declarados]
    sobram = [campo for campo in declarados if campo not in campos]
    if faltam:
        achados.append(f"resultado's linhas lack the columns {', '.join(faltam)}")
    if sobram:
        achados.append(f"resultado's linhas have no column for {', '.join(sobram)}")
    validado = resultado(data=exemplo)
    if not validado.is_valid():
        erros = "; ".join(_achatar(validado.errors))
        achados.append(f"exemplo is not a valid resultado: {erros}")
    return achados


def _achatar(erros: Any, onde: str = "") -> list[str]:
    """DRF's nested errors as `linhas.0.receita: message` lines."""
    if isinstance(erros, dict):
        return [
            texto
            for chave, valor in erros.items()
            for texto in _achatar(valor, f"{onde}.{chave}" if onde else str(chave))
        ]
    if isinstance(erros, list) and all(isinstance(e, str) for e in erros):
        return [f"{onde or 'resultado'}: {e}" for e in erros]
    if isinstance(erros, list):
        return [
            texto
            for i, valor in enumerate(erros)
            for texto in _achatar(valor, f"{onde}.{i}" if onde else str(i))
        ]
    return [f"{onde or 'resultado'}: {erros}"]


def _tabelas(tabelas: Any) -> list[str]:
    if not isinstance(tabelas, tuple):
        return ["tabelas_erp must be a tuple of models"]
    achados = []
    for modelo in tabelas:
        if not (isinstance(modelo, type) and issubclass(modelo, models.Model)):
            achados.append(f"tabelas_erp: {modelo!r} is not a model")
            continue
        tabela = modelo._meta.db_table
        if not tabela.startswith("erp_"):
            achados.append(f"tabelas_erp: {tabela} is not an ERP table (erp_*)")
            continue
        try:
            modelo._meta.get_field("tenant")
        except FieldDoesNotExist:
            achados.append(f"tabelas_erp: {tabela} has no tenant")
    return achados


def _reuso(reutilizaveis: Any, tabelas: Any) -> list[str]:
    if not isinstance(reutilizaveis, bool):
        return ["partes_reutilizaveis must be True or False"]
    if not reutilizaveis or not isinstance(tabelas, tuple):
        return []
    return [
        f"partes_reutilizaveis: {modelo._meta.db_table} has no data-version "
        "triggers (relatorios.models.partes.TABELAS_VERSIONADAS)"
        for modelo in tabelas
        if isinstance(modelo, type)
        and issubclass(modelo, models.Model)
        and modelo._meta.db_table.startswith("erp_")
        and modelo._meta.db_table not in TABELAS_VERSIONADAS
    ]


def _nome(cls: Any) -> str:
    # The message's object names the class; this names the type.
    tipo = getattr(cls, "tipo", None)
    return f"tipo {tipo}" if isinstance(tipo, str) else f"{cls!r}"


def _erro(mensagem: str, cls: Any) -> checks.Error:
    return checks.Error(
        mensagem,
        hint="every report type declares its whole identity: see "
        "relatorios/tipos/base.py (TipoRelatorio) and docs/arquitetura.md",
        obj=cls,
        id="relatorios.E003",
    )
