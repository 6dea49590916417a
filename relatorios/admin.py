"""Support staff's view of tenants, users and jobs.

Jobs are read-only here: every change of state goes through `services`.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest

from relatorios.models import RelatorioJob, Tenant, Usuario


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("id", "nome", "fuso_horario", "criado_em")
    search_fields = ("nome",)


@admin.register(Usuario)
class UsuarioAdmin(UserAdmin):
    list_display = ("username", "tenant", "email", "is_staff", "is_active")
    list_filter = ("is_staff", "is_active", "tenant")
    list_select_related = ("tenant",)
    fieldsets = (*UserAdmin.fieldsets, ("Tenant", {"fields": ("tenant",)}))  # type: ignore[misc]
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Tenant", {"fields": ("tenant",)}))


@admin.register(RelatorioJob)
class RelatorioJobAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "tenant",
        "tipo",
        "status",
        "tentativas",
        "progresso",
        "criado_em",
    )
    list_filter = ("status", "tipo")
    list_select_related = ("tenant",)
    search_fields = ("=id", "chave__startswith", "tenant__nome")
    date_hierarchy = "criado_em"
    ordering = ("-id",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
