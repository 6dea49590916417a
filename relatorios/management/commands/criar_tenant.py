from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from relatorios.models import Tenant, Usuario


class Command(BaseCommand):
    help = (
        "Creates a tenant and a manager user in it. The last line of the output "
        "is that user's API token (scripts read it)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("nome", help="the tenant's name")
        parser.add_argument("--usuario", required=True, help="the manager's login")
        parser.add_argument("--senha", help="password (none: token only)")
        parser.add_argument("--email", default="")
        parser.add_argument("--fuso", default="America/Sao_Paulo", help="IANA zone")

    def handle(self, *args: Any, **opcoes: Any) -> None:
        if Usuario.objects.filter(username=opcoes["usuario"]).exists():
            raise CommandError(f"o usuário '{opcoes['usuario']}' já existe")
        tenant = Tenant(nome=opcoes["nome"], fuso_horario=opcoes["fuso"])
        try:
            tenant.full_clean()
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        try:
            with transaction.atomic():
                tenant, usuario, token = self._criar(tenant, opcoes)
        except IntegrityError:
            # A concurrent run took the same user name after our check.
            raise CommandError(f"o usuário '{opcoes['usuario']}' já existe") from None
        self.stdout.write(f"tenant {tenant.pk} criado: {tenant.nome}")
        self.stdout.write(f"usuário {usuario.username} criado no tenant {tenant.pk}")
        self.stdout.write(token.key)

    def _criar(
        self, tenant: Tenant, opcoes: dict[str, Any]
    ) -> tuple[Tenant, Usuario, Token]:
        tenant.save()
        usuario = Usuario(
            username=opcoes["usuario"], email=opcoes["email"], tenant=tenant
        )
        if opcoes["senha"]:
            usuario.set_password(opcoes["senha"])
        else:
            usuario.set_unusable_password()
        usuario.save()
        token = Token.objects.create(user=usuario)
        return tenant, usuario, token
