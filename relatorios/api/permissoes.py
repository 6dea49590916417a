from __future__ import annotations

from typing import Any

from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request


class UsuarioDeTenant(BasePermission):
    """Only users who belong to a tenant use the report API (staff have none)."""

    message = "usuário sem tenant: a API de relatórios é para usuários de um tenant"

    def has_permission(self, request: Request, view: Any) -> bool:
        usuario = request.user
        return bool(
            usuario
            and usuario.is_authenticated
            and getattr(usuario, "tenant_id", None) is not None
        )


def tenant_do_pedido(request: Request) -> int:
    """The caller's tenant id (UsuarioDeTenant already admitted the request)."""
    tenant_id = getattr(request.user, "tenant_id", None)
    if tenant_id is None:
        raise PermissionDenied(UsuarioDeTenant.message)
    return int(tenant_id)


class SoUsuarioDeTenant:
    """Mixin of an APIView whose only permission is `UsuarioDeTenant`:
    checked inline, without DRF instantiating the class per request. Same
    answers: 401 when no credentials authenticated, else 403."""

    def check_permissions(self, request: Request) -> None:
        usuario = request.user
        if not (
            usuario
            and usuario.is_authenticated
            and getattr(usuario, "tenant_id", None) is not None
        ):
            self.permission_denied(  # type: ignore[attr-defined]
                request, message=UsuarioDeTenant.message, code=None
            )
