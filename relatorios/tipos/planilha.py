"""A finished result as a CSV download that pt-BR spreadsheet programs open.

- UTF-8 with a BOM: without it Excel reads the file as Windows-1252 and
  "Saídas" becomes "SaÃ­das".
- `;` between fields and a decimal comma ("1234,50"): what a spreadsheet in a
  pt-BR locale expects; with `,` it would put each line in one cell. No
  thousands separator, so every program reads the numbers as numbers.
- Dates and periods stay ISO (`2026-01-31`, `2026-01`): unambiguous, sortable.
- Lines only, no totals row: a sum over the column (or a pivot table) would
  count the totals twice. The job page shows the totals.
- Streamed: lines come from a server-side cursor, a few thousand at a time.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse

from relatorios.models import RelatorioJob
from relatorios.models.jobs import linhas_do_resultado
from relatorios.tipos import apresentacao

BOM = "\ufeff"


class _Eco:
    """A file-like object whose write returns what it was given (csv docs)."""

    def write(self, valor: str) -> str:
        return valor


def linhas_csv(job: RelatorioJob) -> Iterator[str]:
    escritor = csv.writer(_Eco(), delimiter=";", lineterminator="\r\n")
    linhas = linhas_do_resultado(job)
    primeira = next(linhas, None)
    colunas = apresentacao.colunas(job.tipo, primeira)
    yield BOM + escritor.writerow([c.titulo for c in colunas])
    if primeira is None:
        return
    yield escritor.writerow(_celulas(colunas, primeira))
    for linha in linhas:
        yield escritor.writerow(_celulas(colunas, linha))


def _celulas(colunas: tuple[apresentacao.Coluna, ...], linha: Any) -> list[str]:
    return [apresentacao.na_planilha(c, linha.get(c.campo)) for c in colunas]


def nome_do_arquivo(job: RelatorioJob) -> str:
    params = job.params_dict()
    partes = [job.tipo, params.get("inicio"), params.get("fim"), f"job{job.pk}"]
    return "_".join(str(p) for p in partes if p) + ".csv"


def resposta_csv(job: RelatorioJob) -> StreamingHttpResponse:
    """The download of a `pronto` job (the caller checked tenant and status)."""
    resposta = StreamingHttpResponse(
        (parte.encode("utf-8") for parte in linhas_csv(job)),
        content_type="text/csv; charset=utf-8",
    )
    resposta["Content-Disposition"] = f'attachment; filename="{nome_do_arquivo(job)}"'
    # The result can change (a new run after it expires): never cache it.
    resposta["Cache-Control"] = "private, no-store"
    return resposta
