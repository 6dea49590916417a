from __future__ import annotations

from django.urls import path

from relatorios.api import agendamentos, eventos, jobs, webhooks

# `<job:...>` is the project-wide converter registered in config/urls.py.

# Seed 000's paths have no trailing slash; one is accepted too, without a
# redirect (a redirected POST loses its body in many clients).
urlpatterns = [
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
    # Before the `<tipo>` catch-all: these names are not report types.
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
    path("relatorios/<slug:tipo>", jobs.SubmeterRelatorio.as_view(), name="submeter"),
    path("relatorios/<slug:tipo>/", jobs.SubmeterRelatorio.as_view()),
]
