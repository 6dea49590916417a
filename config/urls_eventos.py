"""The events process's URLs: the two streams, then the JSON API's own.

The proxy in front sends only the two stream paths here and every other to
the WSGI server (docs/operacao.md, "The events process"). The API's routes
follow so that its names resolve here too (a `pronto` job's JSON carries
the `url` of its CSV); anything else is a JSON 404."""

from __future__ import annotations

from django.urls import include, path

from config.urls import IdDeJob  # noqa: F401 (registers the <job:...> converter)
from relatorios.api import eventos

urlpatterns = [
    path("relatorios/eventos", eventos.eventos_do_tenant, name="eventos"),
    path(
        "relatorios/jobs/<job:job_id>/eventos",
        eventos.eventos_do_job,
        name="eventos_do_job",
    ),
    path("", include("relatorios.api.urls")),
]

# JSON whatever the path: this process serves no page (nor their static files).
handler404 = "relatorios.api.eventos.nao_encontrado"
handler500 = "relatorios.api.eventos.erro_do_servidor"
