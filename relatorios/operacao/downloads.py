"""A file download's HTTP response, the same for every audience that serves one."""

from __future__ import annotations

from collections.abc import Iterable

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header


def resposta_de_download(
    partes: Iterable[bytes], *, nome: str, tamanho: int | None, tipo_de_conteudo: str
) -> StreamingHttpResponse:
    """Streamed as it is read, with its name, and its length when known (a
    CSV written as its lines are read has none); never cached (a result can
    change: a new run after it expires)."""
    resposta = StreamingHttpResponse(partes, content_type=tipo_de_conteudo)
    if tamanho is not None:
        resposta["Content-Length"] = str(tamanho)
    resposta["Content-Disposition"] = content_disposition_header(True, nome) or ""
    resposta["Cache-Control"] = "private, no-store"
    return resposta
