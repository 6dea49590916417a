"""A finished result as an Excel workbook (.xlsx) that opens ready to use.

What the CSV cannot carry, a workbook does:
- numbers are numbers and dates are dates (a month is its first day shown as
  `mm/aaaa`), whatever the reader's locale;
- money has a money format, other decimals their own places;
- a header block above the table says what it is: the report, its period,
  its stores, and when it was generated, in the tenant's time zone;
- the header row is bold, frozen and has an AutoFilter over the lines; the
  columns have widths;
- the totals row is a `SUM` formula over each numeric column, stored with the
  result's own total as its cached value (a viewer that does not recompute
  shows the right number; Excel recomputes it from the cells);
- text is always written as text: a store named `=HYPERLINK(...)` stays a
  name, never a formula.

Constant memory: XlsxWriter's constant_memory mode flushes each row to a
temporary file as it is written, and the lines come from a server-side
cursor, so a 100,000-line result never sits in memory (`make bench`, B7,
measures it). The workbook is written to a file object (`gravar_xlsx`):
`notificacoes.arquivos` stores it once per result, and downloads and emails
read it from there.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from datetime import date
from decimal import Decimal, InvalidOperation
from itertools import chain
from typing import IO, Any
from zoneinfo import ZoneInfo

import xlsxwriter
from xlsxwriter.utility import xl_rowcol_to_cell
from xlsxwriter.worksheet import Worksheet

from relatorios import tipos
from relatorios.apresentacao import celulas, periodos
from relatorios.models import RelatorioJob
from relatorios.models.jobs import linhas_do_resultado, totais_do_resultado
from relatorios.tipos.colunas import Coluna

TIPO_DE_CONTEUDO = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

_DIA = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MES = re.compile(r"(\d{4})-(\d{2})")

# Number formats; Excel shows the separators of the reader's locale.
_FORMATOS = {
    "inteiro": "#,##0",
    "decimal": "#,##0.0000",
    "dinheiro": '"R$" #,##0.00;-"R$" #,##0.00',
    "percentual": "0.00%",
}
_FORMATO_DIA = "dd/mm/yyyy"
_FORMATO_MES = "mm/yyyy"
# Column widths (in characters) by format, where the column names none.
_LARGURAS = {"periodo": 12, "inteiro": 12, "decimal": 12, "dinheiro": 16}


def nome_do_arquivo_xlsx(job: RelatorioJob) -> str:
    params = job.params_dict()
    partes = [job.tipo, params.get("inicio"), params.get("fim"), f"job{job.pk}"]
    return "_".join(str(p) for p in partes if p) + ".xlsx"


def gravar_xlsx(job: RelatorioJob, destino: str | IO[bytes]) -> int:
    """Write a `pronto` job's workbook to `destino` (a path or a binary file);
    returns how many lines it holds. The caller checked tenant and status."""
    livro = xlsxwriter.Workbook(
        destino,
        {
            "constant_memory": True,
            "tmpdir": tempfile.gettempdir(),
            # Dates are written as date objects, shown with their own formats.
            "default_date_format": _FORMATO_DIA,
        },
    )
    try:
        return _escrever(livro, job)
    finally:
        livro.close()


# The table's header row (0-based): under the header block (`_bloco`) and
# a blank row.
TOPO = 5


def _escrever(livro: xlsxwriter.Workbook, job: RelatorioJob) -> int:
    folha = livro.add_worksheet(_titulo_da_folha(job.tipo))
    estilos = _Estilos(livro)
    linhas = linhas_do_resultado(job)
    primeira = next(linhas, None)
    colunas = celulas.colunas(job.tipo, primeira)
    # Widths and the frozen header first: constant_memory writes the sheet's
    # layout before its rows, and each row as it comes (so the block above
    # the table is written first, in row order, too).
    for indice, coluna in enumerate(colunas):
        folha.set_column(indice, indice, _largura(coluna))
    folha.freeze_panes(TOPO + 1, 0)
    _bloco(folha, job, estilos)
    for indice, coluna in enumerate(colunas):
        folha.write_string(TOPO, indice, coluna.titulo, estilos.cabecalho)
    n = 0
    if primeira is not None:
        for n, linha in enumerate(chain([primeira], linhas), start=1):
            for indice, coluna in enumerate(colunas):
                valor = linha.get(coluna.campo)
                _celula(folha, TOPO + n, indice, coluna, valor, estilos)
    # The filter's range is the header and the lines, not the Total row.
    folha.autofilter(TOPO, 0, TOPO + n, max(0, len(colunas) - 1))
    _totais(folha, n, colunas, totais_do_resultado(job), estilos)
    return n


def _bloco(folha: Worksheet, job: RelatorioJob, estilos: _Estilos) -> None:
    """The rows above the table: the report's title, then what it covers and
    when it was made, label and value (text cells: never a formula)."""
    params = job.params_dict()
    lojas = params.get("lojas") or []
    fuso = job.tenant.fuso_horario
    gerado = job.concluido_em.astimezone(ZoneInfo(fuso)) if job.concluido_em else None
    folha.write_string(0, 0, _titulo(job.tipo), estilos.titulo)
    for linha, (rotulo, valor) in enumerate(
        (
            (
                "Período",
                periodos.periodo(params["inicio"], params["fim"])
                if "inicio" in params and "fim" in params
                else "",
            ),
            ("Lojas", ", ".join(lojas) if lojas else "todas as lojas"),
            (
                "Gerado em",
                f"{gerado:%d/%m/%Y %H:%M} ({fuso})" if gerado else "",
            ),
        ),
        start=1,
    ):
        folha.write_string(linha, 0, rotulo, estilos.rotulo)
        folha.write_string(linha, 1, valor)


class _Estilos:
    """The workbook's cell formats, made once per workbook."""

    def __init__(self, livro: xlsxwriter.Workbook) -> None:
        self.cabecalho = livro.add_format({"bold": True, "bottom": 1})
        self.titulo = livro.add_format({"bold": True, "font_size": 14})
        self.rotulo = livro.add_format({"bold": True})
        self.numeros = {
            nome: livro.add_format({"num_format": f}) for nome, f in _FORMATOS.items()
        }
        self.dia = livro.add_format({"num_format": _FORMATO_DIA})
        self.mes = livro.add_format({"num_format": _FORMATO_MES})
        self.total = livro.add_format({"bold": True, "top": 1})
        self.totais = {
            nome: livro.add_format({"num_format": f, "bold": True, "top": 1})
            for nome, f in _FORMATOS.items()
        }


def _celula(
    folha: Worksheet,
    linha: int,
    indice: int,
    coluna: Coluna,
    valor: Any,
    estilos: _Estilos,
) -> None:
    if valor is None:
        return
    if coluna.formato == "periodo" and isinstance(valor, str):
        if achado := _DIA.fullmatch(valor):
            data = _data(achado[1], achado[2], achado[3])
            folha.write_datetime(linha, indice, data, estilos.dia)
            return
        if achado := _MES.fullmatch(valor):
            data = _data(achado[1], achado[2], "01")
            folha.write_datetime(linha, indice, data, estilos.mes)
            return
    if coluna.numerica:
        numero = _numero(valor)
        if numero is not None:
            folha.write_number(linha, indice, numero, estilos.numeros[coluna.formato])
            return
    folha.write_string(linha, indice, str(valor))


def _totais(
    folha: Worksheet,
    n: int,
    colunas: Sequence[Coluna],
    totais: dict[str, Any],
    estilos: _Estilos,
) -> None:
    """The row under the lines: 'Total', and for each column that has a total
    in the result a SUM over it (with that total as its cached value), or
    the total itself where the column says a sum of its lines is not one."""
    somadas = [
        (indice, coluna)
        for indice, coluna in enumerate(colunas)
        if coluna.numerica and coluna.campo in totais
    ]
    if not somadas:
        return  # nothing this table totals: no empty Total row
    linha = TOPO + n + 1
    folha.write_string(linha, 0, "Total", estilos.total)
    for indice, coluna in somadas:
        numero = _numero(totais[coluna.campo])
        formato = estilos.totais[coluna.formato]
        if coluna.total == "valor":
            if numero is not None:  # a change from zero has none
                folha.write_number(linha, indice, numero, formato)
            continue
        valor = numero or 0
        if n == 0:  # no lines to sum
            folha.write_number(linha, indice, valor, formato)
            continue
        de = xl_rowcol_to_cell(TOPO + 1, indice)
        ate = xl_rowcol_to_cell(TOPO + n, indice)
        folha.write_formula(linha, indice, f"=SUM({de}:{ate})", formato, valor)


def _numero(valor: Any) -> int | float | None:
    if isinstance(valor, bool):
        return None
    if isinstance(valor, int | float):
        return valor
    try:
        numero = Decimal(str(valor))
    except InvalidOperation:
        return None
    if not numero.is_finite():
        return None
    # Money travels as a decimal string ("100.50"): a float cell, which is
    # what a spreadsheet holds; an integer stays one.
    return int(numero) if numero.as_tuple().exponent == 0 else float(numero)


def _data(ano: str, mes: str, dia: str) -> date:
    return date(int(ano), int(mes), int(dia))


def _largura(coluna: Coluna) -> float:
    # The column's own, or its format's; the title's width at least.
    base = coluna.largura or _LARGURAS.get(coluna.formato, 12)
    return max(base, len(coluna.titulo) + 2)


def _titulo(tipo: str) -> str:
    try:
        return tipos.obter(tipo).titulo
    except tipos.TipoDesconhecido:
        return tipo


def _titulo_da_folha(tipo: str) -> str:
    # Excel's rules for a sheet name: 31 characters, none of []:*?/\
    return re.sub(r"[\[\]:*?/\\]", " ", _titulo(tipo))[:31] or "Resultado"
