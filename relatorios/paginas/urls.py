"""The managers' pages (the API's routes are in relatorios/api/urls.py)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.generic import RedirectView

from relatorios.paginas import agendamentos, downloads, jobs, webhooks

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="painel"), name="inicio"),
    path(
        "entrar/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="entrar",
    ),
    path("sair/", auth_views.LogoutView.as_view(), name="sair"),
    path("painel/", jobs.painel, name="painel"),
    # A scheduled report's signed download link: no login (paginas/downloads.py).
    path("baixar/<str:token>", downloads.baixar, name="baixar"),
    path("painel/relatorios/<slug:tipo>/", jobs.solicitar, name="solicitar"),
    path("painel/antecipacao/", jobs.antecipar, name="antecipar"),
    path("painel/antecipacao/padrao/", jobs.antecipar_padrao, name="antecipar_padrao"),
    path("painel/jobs/<job:job_id>/", jobs.pagina_do_job, name="pagina_do_job"),
    path("painel/jobs/<job:job_id>/estado/", jobs.estado_do_job, name="estado_do_job"),
    path("painel/jobs/<job:job_id>/repetir/", jobs.repetir, name="repetir"),
    path("painel/webhooks/", webhooks.webhooks, name="webhooks_do_painel"),
    path(
        "painel/webhooks/<job:webhook_id>/remover/",
        webhooks.remover,
        name="remover_webhook",
    ),
]

urlpatterns += [
    path("painel/agendamentos/", agendamentos.lista, name="agendamentos"),
    path(
        "painel/agendamentos/novo/",
        agendamentos.criar,
        name="criar_agendamento",
    ),
    path(
        "painel/agendamentos/previa/",
        agendamentos.previa,
        name="previa_do_agendamento",
    ),
    path(
        "painel/agendamentos/<int:agendamento_id>/<slug:acao>/",
        agendamentos.agir,
        name="agir_no_agendamento",
    ),
]
