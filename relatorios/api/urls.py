from __future__ import annotations

from django.urls import path, register_converter

from relatorios.api import agendamentos, eventos, jobs, webhooks

# `<job:...>` is the project-wide converter registered in config/urls.py.


class TipoNaUrl:
    """`<tipo:...>`: a slug that is not one of the API's other collections.

    Django tries the patterns in order; the submit is the API's commonest
    call, and behind twenty-odd patterns it paid for every failed match (~8%
    of a dedup hit's instructions). Excluding the other collections' names
    lets it go first and still leave them theirs. Any other slug is a submit
    (an unknown type is answered by the view, as before).
    """

    regex = r"(?!(?:agendamentos|alertas|webhooks|eventos)(?:/|$))[-a-zA-Z0-9_]+"

    def to_python(self, valor: str) -> str:
        return valor

    def to_url(self, valor: str) -> str:
        return valor


register_converter(TipoNaUrl, "tipo")

# Seed 000's paths have no trailing slash; one is accepted too, without a
# redirect (a redirected POST loses its body in many clients).
urlpatterns = [
    path("relatorios/<tipo:tipo>", jobs.SubmeterRelatorio.as_view(), name="submeter"),
    path("relatorios/<tipo:tipo>/", jobs.SubmeterRelatorio.as_view()),
    path("relatorios/jobs/<job:job_id>", jobs.StatusDoJob.as_view(), name="job"),
    path("relatorios/jobs/<job:job_id>/", jobs.StatusDoJob.as_view()),
    path(
        "relatorios/jobs/<job:job_id>/resultado.csv",
        jobs.ResultadoCsv.as_view(),
        name="resultado_csv",
    ),
    path(
        "relatorios/jobs/<job:job_id>/resultado.xlsx",
        jobs.ResultadoXlsx.as_view(),
        name="resultado_xlsx",
    ),
    # Not report types: `<tipo:...>` above does not match these names.
    path("relatorios/agendamentos", agendamentos.Agendamentos.as_view()),
    path("relatorios/agendamentos/", agendamentos.Agendamentos.as_view()),
    path(
        "relatorios/agendamentos/<job:agendamento_id>",
        agendamentos.DetalheDoAgendamento.as_view(),
    ),
    path(
        "relatorios/agendamentos/<job:agendamento_id>/",
        agendamentos.DetalheDoAgendamento.as_view(),
    ),
    path(
        "relatorios/agendamentos/<job:agendamento_id>/pausar",
        agendamentos.PausarAgendamento.as_view(),
    ),
    path(
        "relatorios/agendamentos/<job:agendamento_id>/pausar/",
        agendamentos.PausarAgendamento.as_view(),
    ),
    path(
        "relatorios/agendamentos/<job:agendamento_id>/retomar",
        agendamentos.RetomarAgendamento.as_view(),
    ),
    path(
        "relatorios/agendamentos/<job:agendamento_id>/retomar/",
        agendamentos.RetomarAgendamento.as_view(),
    ),
    path("relatorios/alertas", agendamentos.Alertas.as_view()),
    path("relatorios/alertas/", agendamentos.Alertas.as_view()),
    path("relatorios/webhooks", webhooks.Webhooks.as_view(), name="webhooks"),
    path("relatorios/webhooks/", webhooks.Webhooks.as_view()),
    path(
        "relatorios/webhooks/<job:webhook_id>",
        webhooks.WebhookDoTenant.as_view(),
        name="webhook",
    ),
    path("relatorios/webhooks/<job:webhook_id>/", webhooks.WebhookDoTenant.as_view()),
    # The streams are the events process's (config/urls_eventos.py, before
    # these): reached here, there is none behind this address.
    path("relatorios/eventos", eventos.fora_do_processo_de_eventos),
    path("relatorios/eventos/", eventos.fora_do_processo_de_eventos),
]
