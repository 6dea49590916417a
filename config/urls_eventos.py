"""The events process's URLs: the two streams, and nothing else served.

The proxy in front sends only the two stream paths here and every other to
the WSGI server (docs/operacao.md, "The events process"). This process runs
no middleware (config/settings_eventos.py), so the API's views must not be
served here: a submit or a DELETE reached directly would skip the API's
rate limit, CSRF and the rest of its chain. Their routes are kept for their
names only (a `pronto` job's JSON carries the `url` of its CSV, reversed),
each answering the API's JSON 404; anything else is a JSON 404 too."""

from __future__ import annotations

from django.urls import URLPattern, path

from config.urls import IdDeJob  # noqa: F401 (registers the <job:...> converter)
from relatorios.api import eventos
from relatorios.api import urls as urls_da_api

urlpatterns = [
    path("relatorios/eventos", eventos.eventos_do_tenant, name="eventos"),
    path(
        "relatorios/jobs/<job:job_id>/eventos",
        eventos.eventos_do_job,
        name="eventos_do_job",
    ),
    *(
        URLPattern(rota.pattern, eventos.fora_do_processo_de_eventos, name=rota.name)
        for rota in urls_da_api.urlpatterns
        if isinstance(rota, URLPattern) and rota.name
    ),
]

# JSON whatever the path: this process serves no page (nor their static files).
handler404 = "relatorios.api.eventos.nao_encontrado"
handler500 = "relatorios.api.eventos.erro_do_servidor"
