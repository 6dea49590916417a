from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction
from rest_framework.authtoken.models import Token

from relatorios import tipos
from relatorios.models import Tenant, Usuario, Venda
from relatorios.models.permissoes import criar_grupo_suporte

TENANT = "Rede Demo"
GERENTE, SENHA_GERENTE = "gerente", "gerente123"
# Support staff: in the Suporte group (what support does every day), and a
# superuser for tenants, users and tokens.
SUPORTE, SENHA_SUPORTE = "suporte", "suporte123"
ADMIN, SENHA_ADMIN = "admin", "admin123"


class Command(BaseCommand):
    help = (
        "Ensures a demo tenant with a manager (and a support superuser) and "
        "sample data exist; safe to run again. For `make run` only."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--vendas", type=int, default=50_000)
        parser.add_argument("--url", default="http://127.0.0.1:8000")

    def handle(self, *args: Any, **opcoes: Any) -> None:
        with transaction.atomic():
            tenant, _ = Tenant.objects.get_or_create(nome=TENANT)
            gerente, criado = Usuario.objects.get_or_create(
                username=GERENTE, defaults={"tenant": tenant}
            )
            if criado:
                gerente.set_password(SENHA_GERENTE)
                gerente.save()
            token, _ = Token.objects.get_or_create(user=gerente)
            if not Usuario.objects.filter(username=SUPORTE).exists():
                suporte = Usuario.objects.create_user(
                    SUPORTE, "", SENHA_SUPORTE, is_staff=True
                )
                suporte.groups.add(criar_grupo_suporte())
            if not Usuario.objects.filter(username=ADMIN).exists():
                Usuario.objects.create_superuser(ADMIN, "", SENHA_ADMIN)
        if not Venda.objects.filter(tenant=tenant).exists():
            call_command(
                "gerar_dados",
                tenant=tenant.pk,
                lojas=5,
                vendas=opcoes["vendas"],
                stdout=self.stdout,
            )
        url = opcoes["url"]
        nomes = ", ".join(tipos.registro())
        self.stdout.write(
            f"""
relatorios demo
  pages:  {url}/painel/   login {GERENTE} / {SENHA_GERENTE}
          (tenant {tenant.nome}, id {tenant.pk})
  admin:  {url}/admin/   login {SUPORTE} / {SENHA_SUPORTE} (Suporte group)
          or {ADMIN} / {SENHA_ADMIN} (superuser: tenants, users, tokens)
  API:    {url}/relatorios/<tipo>   (tipos: {nomes})
  token:  {token.key}

  curl -si -X POST {url}/relatorios/vendas \\
       -H 'Authorization: Token {token.key}' -H 'Content-Type: application/json' \\
       -d '{{"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "dia"}}'
"""
        )
