from __future__ import annotations

from typing import Any

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand
from psycopg import sql


class Command(BaseCommand):
    help = "Creates the configured PostgreSQL database if it does not exist yet."

    def handle(self, *args: Any, **opcoes: Any) -> None:
        banco = settings.DATABASES["default"]
        nome = banco["NAME"]
        # Connect to the maintenance database: the target may not exist yet.
        with psycopg.connect(
            dbname="postgres",
            user=banco.get("USER") or None,
            password=banco.get("PASSWORD") or None,
            host=banco.get("HOST") or None,
            port=banco.get("PORT") or None,
            autocommit=True,
        ) as conexao:
            existe = conexao.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [nome]
            ).fetchone()
            if existe:
                self.stdout.write(f"banco {nome} já existe")
                return
            conexao.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(nome)))
            self.stdout.write(f"banco {nome} criado")
