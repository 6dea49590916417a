from __future__ import annotations

import zoneinfo

from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import models


def validar_fuso(valor: str) -> None:
    try:
        zoneinfo.ZoneInfo(valor)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationError(f"fuso horário desconhecido: {valor}") from exc


class Tenant(models.Model):
    """A client company (a store chain): the boundary no data ever crosses."""

    id = models.BigAutoField(primary_key=True)
    nome = models.CharField(max_length=200)
    fuso_horario = models.CharField(
        max_length=64, default="America/Sao_Paulo", validators=[validar_fuso]
    )
    criado_em = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "tenants"
        ordering = ["nome"]

    def __str__(self) -> str:
        return self.nome


class Usuario(AbstractUser):
    """A person or client app; managers belong to one tenant, support staff to none."""

    tenant = models.ForeignKey(
        Tenant,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="usuarios",
    )

    class Meta:
        db_table = "usuarios"
        verbose_name = "usuário"
        verbose_name_plural = "usuários"

    def __str__(self) -> str:
        return self.username
