"""The managers' pages (the API's routes are in relatorios/api/urls.py)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.generic import RedirectView

from relatorios import paginas_agendamentos, paginas_webhooks, views

# The `job` path converter (digits; range checked by the lookup) is the API's.
from relatorios.api import urls as _api_urls  # noqa: F401

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="painel"), name="inicio"),
    path(
        "entrar/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="entrar",
    ),
    path("sair/", auth_views.LogoutView.as_view(), name="sair"),
    path("painel/", views.painel, name="painel"),
    path("painel/relatorios/<slug:tipo>/", views.solicitar, name="solicitar"),
    path("painel/jobs/<job:job_id>/", views.pagina_do_job, name="pagina_do_job"),
    path("painel/jobs/<job:job_id>/estado/", views.estado_do_job, name="estado_do_job"),
    path("painel/jobs/<job:job_id>/repetir/", views.repetir, name="repetir"),
    path("painel/webhooks/", paginas_webhooks.webhooks, name="webhooks_do_painel"),
    path(
        "painel/webhooks/<job:webhook_id>/remover/",
        paginas_webhooks.remover,
        name="remover_webhook",
    ),
]

urlpatterns += [
    path("painel/agendamentos/", paginas_agendamentos.lista, name="agendamentos"),
    path(
        "painel/agendamentos/novo/",
        paginas_agendamentos.criar,
        name="criar_agendamento",
    ),
    path(
        "painel/agendamentos/<int:agendamento_id>/<slug:acao>/",
        paginas_agendamentos.agir,
        name="agir_no_agendamento",
    ),
]
