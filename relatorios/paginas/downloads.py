"""/baixar/<token>: a scheduled report's file, for a recipient without a login.

The token is a signed link (`notificacoes.links`) sent in the delivery's
email: it opens one finished job's .xlsx and nothing else, until it expires,
the result changes, or the link is revoked. No session is read or needed; a
link we did not sign is a 404, one whose time or result is gone (or that was
revoked) a 410 page that says so.

Nobody logs in here, so this is where a stranger can make the service work:
each link and each client address opens at most a few downloads a minute
(429), and the file is never built per click: it is streamed from where it
is stored (`notificacoes.arquivos`), built once by whichever comes first. A
click that finds it being built gets a page that reloads itself (503 with
Retry-After). A result too large for a workbook is served as its CSV,
streamed from the stored result. A file served records that its delivery
was opened (`agendamentos.aberturas`).
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET

from relatorios.agendamentos import aberturas
from relatorios.apresentacao import planilha
from relatorios.notificacoes import arquivos, links
from relatorios.operacao import acesso
from relatorios.operacao.downloads import resposta_de_download

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
    endereco = acesso.cliente(request.META).endereco or "desconhecido"
    espera = links.contar(token=token, endereco=endereco)
    if espera is not None:
        return _volte_depois(request, 429, espera, "muitos downloads em pouco tempo")
    resposta: HttpResponseBase
    try:
        guardado = arquivos.obter(download.job, na_web=True)
    except arquivos.GrandeDemais:
        resposta = resposta_de_download(
            planilha.linhas_csv(download.job),
            nome=planilha.nome_do_arquivo(download.job),
            tamanho=None,
            tipo_de_conteudo=planilha.TIPO_DE_CONTEUDO,
        )
    except arquivos.Ocupado as ocupado:
        return _volte_depois(
            request, 429 if ocupado.do_tenant else 503, ocupado.espera_s, str(ocupado)
        )
    else:
        resposta = resposta_de_download(
            arquivos.fatias(guardado),
            nome=guardado.nome,
            tamanho=guardado.tamanho,
            tipo_de_conteudo=guardado.tipo_de_conteudo,
        )
    if download.ocorrencia_id is not None and download.destino is not None:
        # The recipient opened what was delivered to them (docs/agendamentos.md,
        # "Who opens it"); a link that names no delivery has no one to credit.
        aberturas.registrar_link(
            tenant_id=download.job.tenant_id,
            ocorrencia_id=download.ocorrencia_id,
            destino=download.destino,
        )
    # A link in an email is no page to index.
    resposta["X-Robots-Tag"] = "noindex"
    return resposta


def _volte_depois(
    request: HttpRequest, status: int, espera_s: int, motivo: str
) -> HttpResponse:
    """A page that says why and reloads itself when it is time (no script:
    the `Refresh` header works under the strict CSP and without JavaScript)."""
    resposta = render(
        request,
        "relatorios/download_em_espera.html",
        {"motivo": motivo, "espera_s": espera_s},
        status=status,
    )
    resposta["Retry-After"] = str(espera_s)
    resposta["Refresh"] = str(espera_s)
    resposta["X-Robots-Tag"] = "noindex"
    return resposta
