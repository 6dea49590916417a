"""Support staff's view of tenants and their users."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import ValidationError

from relatorios.models import Tenant, Usuario


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("id", "nome", "fuso_horario", "criado_em")
    search_fields = ("nome",)


class UsuarioForm(forms.ModelForm):
    def clean(self) -> dict[str, Any]:
        dados = super().clean() or {}
        if dados.get("tenant") and (dados.get("is_staff") or dados.get("is_superuser")):
            # The admin shows every tenant's data; the site refuses such users
            # anyway, this says why at the moment someone tries.
            raise ValidationError(
                "um usuário de tenant não pode ser da equipe nem superusuário"
            )
        return dados


@admin.register(Usuario)
class UsuarioAdmin(UserAdmin):
    form = UsuarioForm
    list_display = ("username", "tenant", "email", "is_staff", "is_active")
    list_filter = ("is_staff", "is_active", "groups", "tenant")
    list_select_related = ("tenant",)
    fieldsets = (*UserAdmin.fieldsets, ("Tenant", {"fields": ("tenant",)}))  # type: ignore[misc]
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Tenant", {"fields": ("tenant",)}))
