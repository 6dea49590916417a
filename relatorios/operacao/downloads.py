"""A file download's HTTP response, the same for every audience that serves one."""

from __future__ import annotations

from collections.abc import Iterable

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header


def resposta_de_download(
    partes: Iterable[bytes], *, nome: str, tamanho: int, tipo_de_conteudo: str
) -> StreamingHttpResponse:
    """Streamed as it is read, with its length and name; never cached (a
    result can change: a new run after it expires)."""
    resposta = StreamingHttpResponse(partes, content_type=tipo_de_conteudo)
    resposta["Content-Length"] = str(tamanho)
    resposta["Content-Disposition"] = content_disposition_header(True, nome) or ""
    resposta["Cache-Control"] = "private, no-store"
    return resposta
