"""The data of a result's chart, summed in SQL from the stored lines.

The job page draws it with Chart.js (`relatorios/static/relatorios/`); what
each type draws is declared beside its columns (`TipoRelatorio.grafico`).
The result's lines are already the report's aggregation; the chart sums
them once more by its axis (and series) in the database, over
`jsonb_array_elements`, so a 100,000-line result never comes to Python for
a picture of a few dozen points.
"""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import connection

from relatorios import tipos
from relatorios.apresentacao import celulas
from relatorios.models import RelatorioJob
from relatorios.tipos.colunas import Coluna, Grafico

# More lines than this on one chart is a tangle: the largest series are
# drawn, the rest summed into one.
MAX_SERIES = 8
OUTRAS = "Outras"

# `j` is the job's row, or (a running job's partial result, which is no
# row's column) the result sent as a parameter (`dados_do_resultado`): the
# FROM and the WHERE of each.
_DO_JOB = ("relatorio_jobs j", "j.id = %(id)s AND j.tenant_id = %(tenant)s")
_DADO = ("(SELECT %(resultado)s::jsonb AS resultado) AS j", "true")

# A daily axis longer than this many days is drawn by week (Monday to
# Sunday, labelled by its Monday): a year of days is a smear of 365 points.
DIAS_POR_SEMANA_APOS = 92

_LINHAS = """
    SELECT CASE WHEN %(semanal)s
                THEN to_char(date_trunc('week', (l ->> %(eixo)s)::date), 'YYYY-MM-DD')
                ELSE l ->> %(eixo)s END AS x,
           max(l ->> %(rotulo)s) AS rotulo,
           coalesce(l ->> %(serie)s, '') AS s,
           sum((l ->> %(valor)s)::numeric) AS v,
           max(l ->> %(rotulo_da_serie)s) AS rs
      FROM {de},
           jsonb_array_elements(
               CASE WHEN jsonb_typeof(j.resultado -> 'linhas') = 'array'
                    THEN j.resultado -> 'linhas' ELSE '[]'::jsonb END) AS l
     WHERE {onde}
       AND jsonb_typeof(l -> %(valor)s) IN ('number', 'string')
       AND (l ->> %(valor)s) ~ '^-?[0-9]+(\\.[0-9]+)?$'
     GROUP BY 1, 3
"""

# One series per value of `serie`: the MAX_SERIES largest by their total,
# the others summed as OUTRAS (ranked after them).
_POR_SERIE = """
    WITH por AS ({linhas}),
         ordem AS (SELECT s, row_number() OVER (ORDER BY sum(v) DESC, s) AS n
                     FROM por GROUP BY s)
    SELECT p.x, max(p.rotulo),
           CASE WHEN o.n <= %(max_series)s THEN p.s ELSE %(outras)s END,
           least(o.n, %(max_series)s + 1),
           sum(p.v),
           CASE WHEN min(o.n) <= %(max_series)s THEN max(p.rs) ELSE %(outras)s END
      FROM por p JOIN ordem o USING (s)
     GROUP BY 1, 3, 4
     ORDER BY 1, 4
"""

_ORDENS = {"eixo": "x", "menores": "v, x", "maiores": "v DESC, x"}


def dados(job: RelatorioJob) -> dict[str, Any] | None:
    """What the page's script draws, or None (a type without a chart, a
    result without lines): the chart's kind and title, the axis' labels and,
    per series, one value per label (None where a series has no point)."""
    return _dados(
        job.tipo,
        job.params_dict(),
        _DO_JOB,
        {"id": job.pk, "tenant": job.tenant_id},
    )


def dados_do_resultado(
    tipo: str, params: dict[str, Any], resultado: Any
) -> dict[str, Any] | None:
    """`dados` of a result that is no job's column yet: a running job's
    partial result (`jobs.parcial`), summed by the same statement."""
    return _dados(tipo, params, _DADO, {"resultado": json.dumps(resultado)})


def semanal(grafico: Grafico, colunas: tuple[Coluna, ...], params: Any) -> bool:
    """Whether the chart is drawn by week: a daily period axis over a long
    request (`DIAS_POR_SEMANA_APOS`)."""
    if _coluna(colunas, grafico.eixo).formato != "periodo":
        return False
    if params.get("agrupar") != "dia":
        return False
    try:
        dias = date.fromisoformat(params["fim"]) - date.fromisoformat(params["inicio"])
    except (KeyError, TypeError, ValueError):
        return False
    return dias.days + 1 > DIAS_POR_SEMANA_APOS


def _dados(
    nome: str, params: dict[str, Any], fonte: tuple[str, str], origem: dict[str, Any]
) -> dict[str, Any] | None:
    try:
        tipo = tipos.obter(nome)
    except tipos.TipoDesconhecido:
        return None
    grafico = tipo.grafico
    if grafico is None:
        return None
    linhas = _LINHAS.format(de=fonte[0], onde=fonte[1])
    parametros: dict[str, Any] = {
        **origem,
        "eixo": grafico.eixo,
        "rotulo": grafico.rotulo or grafico.eixo,
        "serie": grafico.serie or "",
        "rotulo_da_serie": grafico.rotulo_da_serie or grafico.serie or "",
        "semanal": semanal(grafico, tipo.colunas, params),
        "valor": grafico.valor,
        "max_series": MAX_SERIES,
        "outras": OUTRAS,
    }
    with connection.cursor() as cursor:
        if grafico.serie is not None:
            cursor.execute(_POR_SERIE.format(linhas=linhas), parametros)
            pontos = cursor.fetchall()
        else:
            ordem = _ORDENS[grafico.ordem]
            limite = "" if grafico.limite is None else f"LIMIT {int(grafico.limite)}"
            cursor.execute(
                f"SELECT x, rotulo, s, 1, v, rs FROM ({linhas}) AS t "
                f"ORDER BY {ordem} {limite}",
                parametros,
            )
            pontos = cursor.fetchall()
    if not pontos:
        return None
    desenho = _montar(grafico, tipo.colunas, pontos)
    if parametros["semanal"]:
        desenho["titulo"] += " (por semana, de segunda a domingo)"
    return desenho


def _montar(
    grafico: Grafico, colunas: tuple[Coluna, ...], pontos: list[tuple[Any, ...]]
) -> dict[str, Any]:
    eixos: list[str] = []
    rotulos: dict[str, str] = {}
    series: dict[tuple[int, str], dict[str, float]] = {}
    nomes: dict[tuple[int, str], str] = {}
    for x, rotulo, serie, n, valor, nome in pontos:
        if x not in rotulos:
            eixos.append(x)
            rotulos[x] = rotulo or x
        series.setdefault((n, serie), {})[x] = float(Decimal(valor))
        nomes[(n, serie)] = nome or serie
    coluna_do_eixo = _coluna(colunas, grafico.eixo)
    coluna_do_valor = _coluna(colunas, grafico.valor)
    return {
        "forma": "line" if grafico.forma == "linha" else "bar",
        "titulo": grafico.titulo,
        "rotulos": [
            celulas.na_pagina(coluna_do_eixo, x)
            if grafico.rotulo is None
            else rotulos[x]
            for x in eixos
        ],
        "series": [
            {
                "nome": nomes[chave] or coluna_do_valor.titulo,
                "valores": [valores.get(x) for x in eixos],
            }
            for chave, valores in sorted(series.items())
        ],
        "moeda": coluna_do_valor.formato == "dinheiro",
    }


def _coluna(colunas: tuple[Coluna, ...], campo: str) -> Coluna:
    # The check (tipos.verificacao) makes every field of a chart a column.
    return next((c for c in colunas if c.campo == campo), Coluna(campo, campo))
