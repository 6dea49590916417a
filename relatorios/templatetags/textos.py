"""Template filters for times as people read them (relatorios.models.relogio)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone

from relatorios.models import relogio

register = template.Library()


@register.filter
def por_extenso(intervalo: timedelta | None) -> str:
    """{{ cooloff_timedelta|por_extenso }}: '15 minutos'."""
    return relogio.por_extenso(intervalo) if intervalo is not None else "—"


@register.filter
def no_horario(fuso: str) -> str:
    """{{ tenant.fuso_horario|no_horario }}: 'no horário de Brasília'."""
    return relogio.no_horario(fuso)


@register.filter
def ha(instante: datetime | None) -> str:
    """{{ cluster.batimento_em|ha }}: 'há 3 minutos', 'agora há pouco'."""
    return relogio.ha(instante, timezone.now())
