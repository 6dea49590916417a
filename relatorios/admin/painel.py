"""The operations dashboard (`/admin/painel/`): the queue and the failures
over time, drawn with the Chart.js the pages already serve.

Support reads pictures here where the landing page gives counts: jobs
finished per hour (24 h and 7 days), failures by reason, the queue now,
scheduled occurrences on time, late or missed per day, the tenants that ask
for the most and take the most worker time, the clusters alive. The reads
are `consultas_do_painel` (a few bounded aggregate statements); this module
shapes them into charts, whose points the page carries as JSON for
`relatorios/static/relatorios/painel.js`. Only the `ver_painel` permission
opens it (the Suporte group has it).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta
from time import monotonic
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from relatorios.admin import clusters as admin_clusters
from relatorios.admin import consultas_do_painel as consultas
from relatorios.admin.comum import curto
from relatorios.models import relogio

PERMISSAO = "relatorios.ver_painel"
HORAS_DA_SEMANA = 7 * 24
DIAS_DE_OCORRENCIAS = 14
LIMITE_DE_MOTIVOS = 8
LIMITE_DE_TENANTS = 10

# The admin's status colours (relatorios/static/relatorios/admin.css).
VERDE, VERMELHO, LARANJA, CINZA, AZUL = (
    "#2b8a3e",
    "#c92a2a",
    "#e67700",
    "#868e96",
    "#0b63ce",
)


@dataclass(frozen=True)
class Serie:
    nome: str
    valores: list[float]
    cor: str


@dataclass(frozen=True)
class Grafico:
    """What painel.js draws: a Chart.js bar chart, stacked or lying down."""

    titulo: str
    rotulos: list[str]
    series: list[Serie]
    empilhado: bool = False
    deitado: bool = False
    # The values' unit, for the axis and the tooltips ("min").
    unidade: str = ""
    vazio_texto: str = ""
    # Where each bar leads (the filtered list behind it); "" for none.
    links: list[str] = field(default_factory=list)

    @property
    def vazio(self) -> bool:
        return not self.rotulos

    @property
    def linhas(self) -> list[tuple[str, str, list[float]]]:
        """The chart as a table's rows (its accessible alternative): each
        label, its link and its values."""
        return [
            (
                rotulo,
                self.links[i] if i < len(self.links) else "",
                [s.valores[i] for s in self.series],
            )
            for i, rotulo in enumerate(self.rotulos)
        ]

    def dados(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Painel:
    graficos: dict[str, Grafico]
    fila: consultas.Fila
    clusters: list[dict[str, Any]] = field(default_factory=list)
    reuso: list[consultas.ReusoDeTenant] = field(default_factory=list)
    gerado_em: Any = field(default_factory=timezone.now)

    @property
    def idade_do_pendente_mais_antigo(self) -> str:
        idade = self.fila.idade_do_mais_antigo_s
        if idade is None:
            return "—"
        return curto(timedelta(seconds=idade))

    def dados(self) -> dict[str, dict[str, Any]]:
        return {nome: g.dados() for nome, g in self.graficos.items()}


# The admin's time zone -> (valid until, on the monotonic clock; the dashboard).
_guardados: dict[str, tuple[float, Painel]] = {}
_montando = threading.Lock()


def montado(fuso: str) -> Painel:
    """`montar()`, reused for RELATORIOS_PAINEL_CACHE_S, one build at a time
    per process.

    A build is seven aggregate statements over the last week (about a
    second at one job a second); four support tabs reloading it took
    another tenant's status reads from 5 ms to 1.5 s. Now a reload within
    the validity reads nothing, and concurrent opens wait for the one build
    and share it. The page says how old it is (`gerado_em`).
    """
    validade = float(settings.RELATORIOS_PAINEL_CACHE_S)
    if validade <= 0:
        return montar(fuso)
    guardado = _guardados.get(fuso)
    if guardado is not None and guardado[0] > monotonic():
        return guardado[1]
    with _montando:
        guardado = _guardados.get(fuso)
        if guardado is not None and guardado[0] > monotonic():
            return guardado[1]
        painel = montar(fuso)
        _guardados[fuso] = (monotonic() + validade, painel)
        return painel


def esquecer() -> None:
    """Forget the kept dashboards (tests)."""
    _guardados.clear()


def montar(fuso: str) -> Painel:
    """Every read of the dashboard, on `fuso`'s clock."""
    horas = consultas.concluidos_por_hora(horas=HORAS_DA_SEMANA)
    # In the page's order: half-width charts in pairs, the week and the
    # occurrences across the page (relatorios/static/relatorios/admin.css).
    graficos = {
        "concluidos_24h": _concluidos(
            "Jobs concluídos por hora — últimas 24 h", horas[-24:], "%H h", fuso
        ),
        "falhas": _falhas(consultas.falhas_por_motivo(limite=LIMITE_DE_MOTIVOS)),
        "concluidos_7d": _concluidos(
            "Jobs concluídos por hora — últimos 7 dias", horas, "%d/%m %H h", fuso
        ),
        "ocorrencias": _ocorrencias(
            consultas.ocorrencias_por_dia(dias=DIAS_DE_OCORRENCIAS, fuso=fuso), fuso
        ),
        "tenants_jobs": _tenants(
            "Tenants com mais jobs — últimas 24 h",
            consultas.tenants_por_jobs(limite=LIMITE_DE_TENANTS),
            serie="jobs criados",
            cor=AZUL,
        ),
        "tenants_tempo": _tenants(
            "Tenants com mais tempo de worker — últimas 24 h",
            [
                consultas.Consumo(c.tenant_id, c.nome, round(c.valor / 60, 1))
                for c in consultas.tenants_por_tempo(limite=LIMITE_DE_TENANTS)
            ],
            serie="minutos de worker",
            cor=LARANJA,
            unidade="min",
        ),
    }
    return Painel(
        graficos=graficos,
        fila=consultas.fila(),
        clusters=[
            {
                "cluster": c,
                "estado": admin_clusters.estado(c),
                "iniciado": relogio.hora_local(c.iniciado_em, fuso),
            }
            for c in consultas.clusters_vivos()
        ],
        reuso=consultas.reuso_por_tenant(limite=LIMITE_DE_TENANTS),
    )


def _concluidos(
    titulo: str, horas: list[consultas.Hora], formato: str, fuso: str
) -> Grafico:
    return Grafico(
        titulo=titulo,
        rotulos=[relogio.no_fuso(h.inicio, fuso).strftime(formato) for h in horas],
        series=[
            Serie("pronto", [h.prontos for h in horas], VERDE),
            Serie("falhou", [h.falhos for h in horas], VERMELHO),
        ],
        empilhado=True,
    )


def _lista(modelo: str, **filtros: str) -> str:
    url = reverse(f"admin:relatorios_{modelo}_changelist")
    return f"{url}?{urlencode(filtros)}"


def _falhas(motivos: list[consultas.Motivo]) -> Grafico:
    # A reason leads to its failed jobs ("outros": all the failed ones).
    especiais = ("outros", consultas.SEM_MENSAGEM)
    return Grafico(
        links=[
            _lista("relatoriojob", status__exact="falhou")
            if m.motivo in especiais
            else _lista(
                "relatoriojob", status__exact="falhou", erro__startswith=m.motivo
            )
            for m in motivos
        ],
        titulo="Falhas por motivo",
        rotulos=[m.motivo for m in motivos],
        series=[
            Serie("últimas 24 h", [m.dia for m in motivos], VERMELHO),
            Serie("últimos 7 dias", [m.semana for m in motivos], CINZA),
        ],
        deitado=True,
        vazio_texto="Nenhum job falhou nos últimos 7 dias.",
    )


def _ocorrencias(dias: list[consultas.Dia], fuso: str) -> Grafico:
    # A day leads to the alerts of its occurrences (late or missed), that
    # day being the dashboard's zone's.
    def alertas_do_dia(dia: date) -> str:
        inicio = datetime.combine(dia, time(), tzinfo=ZoneInfo(fuso))
        fim = datetime.combine(dia + timedelta(days=1), time(), tzinfo=ZoneInfo(fuso))
        return _lista(
            "alerta",
            situacao="todos",
            ocorrencia__planejado_para__gte=inicio.isoformat(),
            ocorrencia__planejado_para__lt=fim.isoformat(),
        )

    return Grafico(
        links=[alertas_do_dia(d.dia) for d in dias],
        titulo="Ocorrências agendadas por dia",
        rotulos=[d.dia.strftime("%d/%m") for d in dias],
        series=[
            Serie("no prazo", [d.no_prazo for d in dias], VERDE),
            Serie("atrasadas", [d.atrasadas for d in dias], LARANJA),
            Serie("perdidas", [d.perdidas for d in dias], VERMELHO),
            Serie("a conferir", [d.a_conferir for d in dias], CINZA),
        ],
        empilhado=True,
    )


def _tenants(
    titulo: str,
    consumos: list[consultas.Consumo],
    *,
    serie: str,
    cor: str,
    unidade: str = "",
) -> Grafico:
    return Grafico(
        links=[
            _lista("relatoriojob", tenant__id__exact=str(c.tenant_id)) for c in consumos
        ],
        titulo=titulo,
        rotulos=[c.nome for c in consumos],
        series=[Serie(serie, [c.valor for c in consumos], cor)],
        deitado=True,
        unidade=unidade,
        vazio_texto="Nenhum job nas últimas 24 h.",
    )


def painel(request: HttpRequest, *, site: AdminSite) -> TemplateResponse:
    """The dashboard page; the site's `admin_view` has already refused anyone
    who may not enter the admin (a tenant's user among them)."""
    if not request.user.has_perm(PERMISSAO):
        raise PermissionDenied
    fuso = consultas.fuso_da_maioria()
    return TemplateResponse(
        request,
        "admin/relatorios/painel.html",
        {
            **site.each_context(request),
            "title": "Painel de operação",
            "painel": montado(fuso),
            "fuso": relogio.no_horario(fuso),
            "fuso_iana": fuso,
        },
    )
