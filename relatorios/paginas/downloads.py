"""/baixar/<token>: a scheduled report's file, for a recipient without a login.

The token is a signed link (`notificacoes.links`) sent in the delivery's
email: it opens one finished job's .xlsx and nothing else, until it expires
or the result changes. No session is read or needed; a link we did not
sign is a 404, one whose time or result is gone a 410 page that says so.
"""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest, HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET

from relatorios.apresentacao import excel
from relatorios.notificacoes import links

# Our tokens are a few dozen characters; a longer path is not one of them.
TOKEN_MAX = 512


@require_GET
def baixar(request: HttpRequest, token: str) -> HttpResponseBase:
    if len(token) > TOKEN_MAX:
        raise Http404
    try:
        download = links.abrir(token)
    except links.LinkInvalido:
        raise Http404 from None
    except links.LinkExpirado as expirado:
        return render(
            request,
            "relatorios/link_expirado.html",
            {"motivo": str(expirado)},
            status=410,
        )
    return FileResponse(
        excel.xlsx_temporario(download.job),
        as_attachment=True,
        filename=excel.nome_do_arquivo_xlsx(download.job),
        content_type=excel.TIPO_DE_CONTEUDO,
        headers={
            # The result can change (a new run after it expires): never cached.
            "Cache-Control": "private, no-store",
            # A link in an email is no page to index.
            "X-Robots-Tag": "noindex",
        },
    )
