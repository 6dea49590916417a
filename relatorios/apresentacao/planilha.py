"""A finished result as a CSV download that pt-BR spreadsheet programs open.

- UTF-8 with a BOM: without it Excel reads the file as Windows-1252 and
  "Saídas" becomes "SaÃ­das".
- `;` between fields and a decimal comma ("1234,50"): what a spreadsheet in a
  pt-BR locale expects; with `,` it would put each line in one cell. No
  thousands separator, so every program reads the numbers as numbers.
- Dates and periods stay ISO (`2026-01-31`, `2026-01`): unambiguous, sortable.
- Lines only, no totals row: a sum over the column (or a pivot table) would
  count the totals twice. The job page shows the totals.
- Streamed: lines come from a server-side cursor, a few thousand at a time,
  and leave encoded as they come (a download streams them; `gravar_csv`
  writes them to a file).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import IO, Any

from relatorios.apresentacao import celulas
from relatorios.models import RelatorioJob
from relatorios.models.jobs import linhas_do_resultado
from relatorios.tipos.colunas import Coluna

TIPO_DE_CONTEUDO = "text/csv; charset=utf-8"
BOM = "\ufeff"


class _Eco:
    """A file-like object whose write returns what it was given (csv docs)."""

    def write(self, valor: str) -> str:
        return valor


def linhas_csv(job: RelatorioJob) -> Iterator[bytes]:
    """A `pronto` job's CSV, header first, one encoded line at a time (the
    caller checked tenant and status)."""
    escritor = csv.writer(_Eco(), delimiter=";", lineterminator="\r\n")
    linhas = linhas_do_resultado(job)
    primeira = next(linhas, None)
    colunas = celulas.colunas(job.tipo, primeira)
    yield (BOM + escritor.writerow([c.titulo for c in colunas])).encode()
    if primeira is None:
        return
    yield escritor.writerow(_celulas(colunas, primeira)).encode()
    for linha in linhas:
        yield escritor.writerow(_celulas(colunas, linha)).encode()


def gravar_csv(job: RelatorioJob, destino: IO[bytes]) -> int:
    """Write a `pronto` job's CSV to `destino` (a binary file); returns how
    many lines it holds besides the header. The caller checked tenant and
    status."""
    escritas = 0
    for linha in linhas_csv(job):
        destino.write(linha)
        escritas += 1
    return escritas - 1  # the header


def _celulas(colunas: tuple[Coluna, ...], linha: Any) -> list[str]:
    return [celulas.na_planilha(c, linha.get(c.campo)) for c in colunas]


def nome_do_arquivo(job: RelatorioJob) -> str:
    params = job.params_dict()
    partes = [job.tipo, params.get("inicio"), params.get("fim"), f"job{job.pk}"]
    return "_".join(str(p) for p in partes if p) + ".csv"
