"""What every manager's page shares: who may see it, and whose tenant it is."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone

from relatorios import tipos

Visao = Callable[..., HttpResponse]


def gerente(visao: Visao) -> Visao:
    """Only a logged-in user of a tenant; times shown in the tenant's zone."""

    @wraps(visao)
    def interna(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        usuario = request.user
        if not usuario.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if getattr(usuario, "tenant_id", None) is None:
            # Support staff have no tenant: their place is the admin, where
            # logging in at the managers' door takes them (not to a 403).
            if usuario.is_staff and request.method in ("GET", "HEAD"):
                return redirect("admin:index")
            raise PermissionDenied("esta área é para usuários de um tenant")
        with timezone.override(usuario.tenant.fuso_horario):  # type: ignore[union-attr]
            return visao(request, *args, **kwargs)

    return interna


def tenant_id_do_pedido(request: HttpRequest) -> int:
    tenant_id = getattr(request.user, "tenant_id", None)
    if tenant_id is None:  # `gerente` already refused such users
        raise PermissionDenied
    return int(tenant_id)


def titulo_do_tipo(tipo: str) -> str:
    return tipos.titulo(tipo)
