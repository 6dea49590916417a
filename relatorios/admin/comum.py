"""What every support page shares: the type filter, bulk actions, how times read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from relatorios import tipos
from relatorios.jobs.suporte import Acao
from relatorios.models import relogio

# One bulk action touches at most this many rows (each is its own guarded
# transaction); "select all" on a million rows must be narrowed by filters.
LIMITE_EM_MASSA = 500


class SomenteLeitura:
    """Nobody adds, edits or deletes these rows by hand: only the domain's
    functions, through the actions, change them (each ModelAdmin lists its own)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class FiltroTipo(admin.SimpleListFilter):
    """Choices from the registry: Django's default would SELECT DISTINCT tipo."""

    title = "tipo"
    parameter_name = "tipo"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return sorted(
            ((nome, tipos.titulo(nome)) for nome in tipos.registro()),
            key=lambda par: par[1],
        )

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        return queryset.filter(tipo=self.value()) if self.value() else None


# --- Bulk actions: one service call per row, one log line each, one tally ----------


def _feitos_padrao(textos: Textos, n: int) -> str:
    return f"{textos.feito}: {n}."


def _ignorados_padrao(textos: Textos, n: int, razoes: str) -> str:
    return f"{textos.acao} sem mudança: {razoes}."


@dataclass(frozen=True)
class Textos:
    """How an action is named in messages and in the admin log.

    `mensagem_feitos`/`mensagem_ignorados` shape the tally; by default
    "Agendamentos pausados: 3." and "pausar sem mudança: <reasons>.".
    """

    acao: str
    feito: str  # "Agendamentos pausados"
    registro: str  # the log line of a row it changed
    mensagem_feitos: Callable[[Textos, int], str] = field(
        default=_feitos_padrao, compare=False
    )
    mensagem_ignorados: Callable[[Textos, int, str], str] = field(
        default=_ignorados_padrao, compare=False
    )


def selecionados(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    *,
    quais: str = "",
) -> list[Any] | None:
    """The selected rows, or None (and an error message) past LIMITE_EM_MASSA.

    `quais` names the rows in the message ("jobs"); the caller shapes the
    queryset (e.g. `.only(...)`)."""
    objetos = list(queryset.order_by("pk")[: LIMITE_EM_MASSA + 1])
    if len(objetos) > LIMITE_EM_MASSA:
        quantos = f"{LIMITE_EM_MASSA} {quais}" if quais else str(LIMITE_EM_MASSA)
        model_admin.message_user(
            request,
            f"Selecione no máximo {quantos} por vez "
            "(use os filtros para estreitar a lista). Nada foi feito.",
            messages.ERROR,
        )
        return None
    return objetos


def aplicar(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    objetos: Iterable[Model],
    textos: Textos,
    acao: Callable[[Any], Acao],
    *,
    detalhe: str = "",
) -> None:
    """Run the service on each row, log every outcome, report one tally."""
    feitos = 0
    ignorados: Counter[str] = Counter()
    for objeto in objetos:
        resultado = acao(objeto)
        if resultado.feita:
            feitos += 1
            mensagem = f"{textos.registro} pelo suporte"
            if detalhe:
                mensagem += f"; {detalhe}"
        else:
            ignorados[resultado.motivo] += 1
            mensagem = f"{textos.acao} sem efeito: {resultado.motivo}"
        model_admin.log_change(request, objeto, mensagem)
    if feitos:
        model_admin.message_user(
            request, textos.mensagem_feitos(textos, feitos), messages.SUCCESS
        )
    if ignorados:
        razoes = "; ".join(f"{razao} ({n})" for razao, n in ignorados.most_common())
        model_admin.message_user(
            request,
            textos.mensagem_ignorados(textos, sum(ignorados.values()), razoes),
            messages.WARNING,
        )


# --- How times and links read -----------------------------------------------------


@admin.display(description="tipo", ordering="tipo")
def tipo_legivel(objeto: Any) -> str:
    """A report type by its title, its code in a tooltip (support's searches
    and the API use the code)."""
    return format_html(
        '<span title="{}">{}</span>', objeto.tipo, tipos.titulo(objeto.tipo)
    )


def local(instante: datetime | None, fuso: str) -> str:
    """An instant on a tenant's wall clock, as support reads it (the zone
    named in the column or the table's heading)."""
    return relogio.hora_local(instante, fuso)


def quando(instante: datetime | None, fuso: str, *, segundos: bool = False) -> str:
    """An instant on a support page: the tenant's wall clock, the zone named."""
    if instante is None:
        return "—"
    return format_html(
        '<time datetime="{}">{}</time> <small class="fuso">({})</small>',
        instante.isoformat(),
        relogio.hora_local(instante, fuso, segundos=segundos),
        relogio.nome_do_fuso(fuso),
    )


def fuso_de(objeto: Any) -> str:
    """The zone of a tenant's object; UTC (named) for the few without one."""
    tenant = getattr(objeto, "tenant", None)
    return tenant.fuso_horario if tenant is not None else "UTC"


def horario_do_tenant(
    campo: str, descricao: str, *, ordenavel: bool = True
) -> Callable[[Any, Any], str]:
    """A column or read-only field showing `campo` on its tenant's clock.

    Assign it on a ModelAdmin (`aberto_em_ = horario_do_tenant("aberto_em",
    "aberto em")`) and name it in list_display or the fieldsets; the list
    must select the tenant (list_select_related)."""

    def mostrar(model_admin: Any, objeto: Any) -> str:
        return quando(getattr(objeto, campo), fuso_de(objeto))

    mostrar.__name__ = f"{campo}_"
    return admin.display(description=descricao, ordering=campo if ordenavel else None)(
        mostrar
    )


def link_do_job(job_id: int | None) -> str:
    if job_id is None:
        return "—"
    return format_html(
        '<a href="{}">job {}</a>',
        reverse("admin:relatorios_relatoriojob_change", args=[job_id]),
        job_id,
    )


def curto(intervalo: timedelta) -> str:
    """A duration as support reads it at a glance: 42 s, 3 min, 2 h 5 min, 4 d 3 h."""
    segundos = max(0, int(intervalo.total_seconds()))
    if segundos < 60:
        return f"{segundos} s"
    minutos, horas, dias = segundos // 60, segundos // 3600, segundos // 86400
    if horas == 0:
        return f"{minutos} min"
    if dias == 0:
        return f"{horas} h {minutos % 60} min" if minutos % 60 else f"{horas} h"
    return f"{dias} d {horas % 24} h" if horas % 24 else f"{dias} d"
