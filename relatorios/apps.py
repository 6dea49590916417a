from __future__ import annotations

from django.apps import AppConfig


class RelatoriosConfig(AppConfig):
    name = "relatorios"
    verbose_name = "Relatórios"
    default_auto_field = "django.db.models.BigAutoField"
