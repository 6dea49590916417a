"""Computing reports before they are asked (issue 34, section 3).

Seed 004's "Pré-cálculo": a report a tenant asks on a pattern (yesterday's
sales every morning, last week's every Monday, the previous month on the
first working day) is computed ahead, in idle capacity, so that the request
finds it `pronto`.

Where the history comes from. Nothing is written per request for this: the
history is `relatorio_jobs` itself, read by the column **`pedido_em`** (when
a job was first asked for), with `tenant_id`, `tipo` and `params`. A job a
person (or a schedule) asks for gets `pedido_em` at its insert (the column's
default, in the submit's own INSERT); a job computed ahead gets it at the
first request it answers (`pedidos._marcar_pedido`, one guarded UPDATE per
such job), and has `antecipado_em`, when it was computed ahead. A replay
that backdates `relatorio_jobs.pedido_em` replays the history (rows are read
with `criado_em` within the window plus a day, through
relatorio_jobs_recentes, so backdating `pedido_em` alone is enough). Limits:
one entry per job, so 20 people asking the same report in a day are one
request; a row the retention deleted (RELATORIOS_RETER_DIAS after its result
expired) is forgotten; a row restarted later keeps its latest request only.

The patterns. A request's range is named relative to its local day (the
tenant's zone) with the schedules' periods (`tipos.periodos`): `ontem`,
`mes_corrente_ate_ontem`, `semana_anterior`, `mes_anterior`; anything else
is ad hoc and never computed ahead. Per (tenant, tipo, the other parameters,
period) the local days it was asked on decide (`devido`) whether it is due on
a given day: the daily ones when asked on 3 of the last 5 days of the same
kind (working days, Monday to Friday, or weekend days: "every working day"
and "every day" both follow), the weekly one on 2 of the last 4 same
weekdays, the monthly one on the same working day of the month (1st, 2nd...)
in one of the last 2 months. It is submitted from RELATORIOS_ANTECIPAR_
ANTECEDENCIA_S before the earliest time of day it was asked at.

The submit is the normal one (`pedidos.submeter(antecipado=True)`): the same
chave, so a report already asked for or already computed ahead is not
computed again, and any number of clusters running the pass submit each job
once. Such a job gets no queue message at its submit; `vagas.despachar`
serves a person's job first, and the claim takes it only in idle capacity
(banco/sql/relatorios_ocioso.sql), within its tenant's slots.

Precision and recall (`indicadores`): of the jobs computed ahead and settled
in the last JANELA_DIAS days (asked for, or expired or failed unasked), the
share asked for; of the jobs asked for in that window, the share a job
computed ahead answered already `pronto`. A pattern whose precision falls
below RELATORIOS_ANTECIPAR_PRECISAO_MINIMA (with at least MINIMO_DE_AMOSTRAS
settled) stops being computed ahead until those results leave the window.
A tenant's switch (`tenants.antecipar`) turns it off for that tenant, and
its managers may switch one pattern off (`desligar_padrao`).
"""

from __future__ import annotations

import calendar
import logging
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection

from relatorios import tipos
from relatorios.banco.comum import agora_do_banco, json_do_banco
from relatorios.jobs import pedidos
from relatorios.jobs.vagas import despachar
from relatorios.models import IndicadorDeAntecipacao, PadraoDesligado, Periodo, Tenant
from relatorios.tipos.normalizacao import ErroDeParametro
from relatorios.tipos.periodos import periodo_concreto

logger = logging.getLogger(__name__)

# The request history looked at (the monthly pattern looks two months back,
# as far as RELATORIOS_RETER_DIAS keeps the rows), and the window of
# precision and recall.
HISTORICO_DIAS = 63
JANELA_DIAS = 28
# Settled results a pattern needs before its precision can stop it.
MINIMO_DE_AMOSTRAS = 3

# The periods a request is recognized by, in the order a tie is resolved
# ("this month up to yesterday" is "yesterday" on the 2nd and "last month"
# on the 1st: it counts as those).
PERIODOS = (
    Periodo.ONTEM,
    Periodo.SEMANA_ANTERIOR,
    Periodo.MES_ANTERIOR,
    Periodo.MES_CORRENTE_ATE_ONTEM,
)
DIARIOS = frozenset({Periodo.ONTEM, Periodo.MES_CORRENTE_ATE_ONTEM})

# One CASE per period for the local day `d`, the ranges of
# tipos.periodos.periodo_concreto (tests/jobs/test_antecipacao.py compares the
# two). `d::timestamp`: date_trunc of a bare date would pick the timestamptz
# overload, in the session's zone.
_CLASSIFICAR = """
    CASE
      WHEN inicio = fim AND fim = d - 1 THEN 'ontem'
      WHEN inicio = date_trunc('week', d::timestamp)::date - 7 AND fim = inicio + 6
        THEN 'semana_anterior'
      WHEN inicio = (date_trunc('month', d::timestamp) - interval '1 month')::date
       AND fim = date_trunc('month', d::timestamp)::date - 1 THEN 'mes_anterior'
      WHEN inicio = date_trunc('month', (d - 1)::timestamp)::date AND fim = d - 1
        THEN 'mes_corrente_ate_ontem'
    END
"""

# Per tenant with computing ahead on, per pattern: the local days it was asked
# on (the last %(desde)s) and the earliest local time of day, plus the
# precision of what was computed ahead for it (the last %(janela)s). Jobs
# computed ahead are classified by the day they were computed on
# (antecipado_em), asked ones by the day they were asked.
# Candidates come through relatorio_jobs_recentes (tenant_id, criado_em): a
# job is asked for at most a result's validity after it was created.
_PADROES = f"""
WITH jobs AS (
    SELECT j.tenant_id, j.tipo, j.params - 'inicio' - 'fim' AS resto,
           (j.params ->> 'inicio')::date AS inicio,
           (j.params ->> 'fim')::date AS fim,
           j.pedido_em AT TIME ZONE t.fuso_horario AS pedido_local,
           (j.antecipado_em AT TIME ZONE t.fuso_horario)::date AS antecipado_dia,
           j.pedido_em, j.antecipado_em, j.status, j.expira_em
      FROM tenants t
      JOIN relatorio_jobs j ON j.tenant_id = t.id
     WHERE t.antecipar
       AND (%(tenant)s::bigint IS NULL OR t.id = %(tenant)s::bigint)
       AND j.criado_em >= %(desde)s - make_interval(secs => %(validade)s)
       AND (j.pedido_em >= %(desde)s OR j.antecipado_em >= %(desde)s)
       AND j.params ->> 'inicio' ~ '^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}$'
       AND j.params ->> 'fim' ~ '^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}$'
), pedidos AS (
    SELECT tenant_id, tipo, resto, d AS dia, hora, {_CLASSIFICAR} AS periodo
      FROM (SELECT *, pedido_local::date AS d, pedido_local::time AS hora
              FROM jobs
             WHERE pedido_em >= %(desde)s AND pedido_em < %(agora)s) AS q
), antecipados AS (
    SELECT tenant_id, tipo, resto, {_CLASSIFICAR} AS periodo,
           pedido_em IS NOT NULL AS pedido,
           pedido_em IS NULL
             AND (status = 'falhou' OR (status = 'pronto' AND expira_em < %(agora)s))
             AS perdido
      FROM (SELECT *, antecipado_dia AS d FROM jobs
             WHERE antecipado_em >= %(janela)s AND antecipado_em < %(agora)s) AS q
), precisao AS (
    SELECT tenant_id, tipo, resto, periodo,
           count(*) FILTER (WHERE pedido) AS pedidos,
           count(*) FILTER (WHERE pedido OR perdido) AS assentados
      FROM antecipados WHERE periodo IS NOT NULL
     GROUP BY 1, 2, 3, 4
)
SELECT p.tenant_id, p.tipo, p.resto, p.periodo,
       array_agg(DISTINCT p.dia ORDER BY p.dia), min(p.hora),
       coalesce(max(c.pedidos), 0), coalesce(max(c.assentados), 0),
       EXISTS (SELECT 1 FROM relatorio_padroes_desligados d
                WHERE d.tenant_id = p.tenant_id AND d.tipo = p.tipo
                  AND d.periodo = p.periodo AND d.resto = p.resto)
  FROM pedidos p
  LEFT JOIN precisao c USING (tenant_id, tipo, resto, periodo)
 WHERE p.periodo IS NOT NULL
 GROUP BY p.tenant_id, p.tipo, p.resto, p.periodo
 ORDER BY p.tenant_id, p.tipo, p.periodo
"""


# Each tenant's precision and recall over the window, written where the
# metrics, the pages and the admin read them (relatorio_antecipacao). Jobs
# through relatorio_jobs_recentes, as above; a tenant with computing ahead
# off keeps its last figures.
_INDICADORES = """
INSERT INTO relatorio_antecipacao AS a
       (tenant_id, assentados, aproveitados, pedidos, imediatos, padroes_parados,
        calculado_em)
SELECT t.id,
       count(j.id) FILTER (WHERE j.antecipado_em >= %(janela)s
                             AND (j.pedido_em IS NOT NULL OR j.status = 'falhou'
                                  OR (j.status = 'pronto'
                                      AND j.expira_em < %(agora)s))),
       count(j.id) FILTER (WHERE j.antecipado_em >= %(janela)s
                             AND j.pedido_em IS NOT NULL),
       count(j.id) FILTER (WHERE j.pedido_em >= %(janela)s),
       count(j.id) FILTER (WHERE j.pedido_em >= %(janela)s
                             AND j.antecipado_em IS NOT NULL
                             AND j.concluido_em <= j.pedido_em),
       coalesce(p.parados, 0), %(agora)s
  FROM tenants t
  LEFT JOIN relatorio_jobs j
         ON j.tenant_id = t.id
        AND j.criado_em >= %(janela)s - make_interval(secs => %(validade)s)
        AND (j.pedido_em >= %(janela)s OR j.antecipado_em >= %(janela)s)
  LEFT JOIN unnest(%(tenants)s::bigint[], %(parados)s::int[]) AS p(tenant_id, parados)
         ON p.tenant_id = t.id
 WHERE t.antecipar
 GROUP BY t.id, p.parados
ON CONFLICT (tenant_id) DO UPDATE
   SET assentados = EXCLUDED.assentados, aproveitados = EXCLUDED.aproveitados,
       pedidos = EXCLUDED.pedidos, imediatos = EXCLUDED.imediatos,
       padroes_parados = EXCLUDED.padroes_parados,
       calculado_em = EXCLUDED.calculado_em
"""


@dataclass(frozen=True)
class Padrao:
    """A report a tenant asks on a pattern, and what its history says."""

    tenant_id: int
    fuso: str
    tipo: str
    # The parameters but the range (stores, grouping...), normalized.
    resto: dict[str, Any]
    periodo: str
    dias: tuple[date, ...]
    # The earliest local time of day it was asked at.
    hora: time
    # Of its results computed ahead and settled: how many were asked for.
    pedidos: int
    assentados: int
    # Switched off by the tenant's managers (`desligar_padrao`).
    desligado: bool = False

    @property
    def precisao(self) -> float | None:
        return None if not self.assentados else self.pedidos / self.assentados

    @property
    def parado_pela_precisao(self) -> bool:
        return self.parado(settings.RELATORIOS_ANTECIPAR_PRECISAO_MINIMA)

    def parado(self, minima: float) -> bool:
        """Stopped for its precision (too few asked for, enough settled)."""
        precisao = self.precisao
        return (
            self.assentados >= MINIMO_DE_AMOSTRAS
            and precisao is not None
            and precisao < minima
        )


def antecipar(*, agora: datetime | None = None) -> int:
    """One pass: as of `agora` (None: the database's now), submit ahead the
    reports each tenant asks on a pattern that are due on agora's local day
    (in the tenant's zone) and whose time of day has come; returns how many
    jobs it created (a report already asked for or computed is a hit of the
    submit's dedup and not counted). Nothing when RELATORIOS_ANTECIPAR is off.
    """
    if not settings.RELATORIOS_ANTECIPAR:
        return 0
    explicito = agora is not None
    agora = agora or agora_do_banco()
    minima = settings.RELATORIOS_ANTECIPAR_PRECISAO_MINIMA
    antecedencia = timedelta(seconds=settings.RELATORIOS_ANTECIPAR_ANTECEDENCIA_S)
    criados = 0
    tenants: set[int] = set()
    todos = padroes(agora=agora)
    medir(agora=agora, padroes_vistos=todos)
    for padrao in todos:
        local = agora.astimezone(ZoneInfo(padrao.fuso))
        hoje = local.date()
        if padrao.desligado or hoje in padrao.dias:
            continue
        if not devido(padrao.periodo, padrao.dias, hoje):
            continue
        inicio_local = datetime.combine(hoje, padrao.hora) - antecedencia
        if local.replace(tzinfo=None) < inicio_local:
            continue
        if padrao.parado(minima):
            logger.info(
                "antecipação parada pela precisão",
                extra={
                    "evento": "antecipacao_parada",
                    "tenant_id": padrao.tenant_id,
                    "tipo": padrao.tipo,
                    "periodo": padrao.periodo,
                    "precisao": padrao.precisao,
                },
            )
            continue
        if _submeter(padrao, hoje, agora if explicito else None):
            criados += 1
            tenants.add(padrao.tenant_id)
    for tenant_id in tenants:
        despachar(tenant_id=tenant_id)
    return criados


def padroes(*, agora: datetime, tenant_id: int | None = None) -> list[Padrao]:
    """Every pattern of every tenant with computing ahead on (or of one), as
    of `agora`."""
    with connection.cursor() as cursor:
        cursor.execute(
            _PADROES,
            {
                "desde": agora - timedelta(days=HISTORICO_DIAS),
                "janela": agora - timedelta(days=JANELA_DIAS),
                "agora": agora,
                "validade": settings.RELATORIOS_VALIDADE_S,
                "tenant": tenant_id,
            },
        )
        linhas = cursor.fetchall()
        cursor.execute(
            "SELECT id, fuso_horario FROM tenants WHERE id = ANY(%s)",
            [sorted({linha[0] for linha in linhas})],
        )
        fusos = dict(cursor.fetchall())
    return [
        Padrao(
            tenant_id=linha[0],
            fuso=fusos[linha[0]],
            tipo=linha[1],
            resto=json_do_banco(linha[2]),
            periodo=linha[3],
            dias=tuple(linha[4]),
            hora=linha[5],
            pedidos=linha[6],
            assentados=linha[7],
            desligado=linha[8],
        )
        for linha in linhas
    ]


def medir(*, agora: datetime, padroes_vistos: list[Padrao] | None = None) -> None:
    """Write each tenant's precision and recall as of `agora`
    (relatorio_antecipacao), with how many of its patterns precision stopped."""
    if padroes_vistos is None:
        padroes_vistos = padroes(agora=agora)
    minima = settings.RELATORIOS_ANTECIPAR_PRECISAO_MINIMA
    parados: dict[int, int] = {}
    for padrao in padroes_vistos:
        if padrao.parado(minima):
            parados[padrao.tenant_id] = parados.get(padrao.tenant_id, 0) + 1
    with connection.cursor() as cursor:
        cursor.execute(
            _INDICADORES,
            {
                "janela": agora - timedelta(days=JANELA_DIAS),
                "agora": agora,
                "validade": settings.RELATORIOS_VALIDADE_S,
                "tenants": list(parados),
                "parados": list(parados.values()),
            },
        )


def devido(periodo: str, dias: Collection[date], hoje: date) -> bool:
    """Whether a report asked on `dias` (local days) for `periodo` is due on
    `hoje` (the module's docstring has the rules)."""
    pedidos = set(dias)
    if periodo in DIARIOS:
        util = _util(hoje)
        anteriores: list[date] = []
        dia = hoje
        while len(anteriores) < (5 if util else 4) and hoje - dia < timedelta(28):
            dia -= timedelta(days=1)
            if _util(dia) == util:
                anteriores.append(dia)
        return sum(d in pedidos for d in anteriores) >= 3
    if periodo == Periodo.SEMANA_ANTERIOR:
        semanas = [hoje - timedelta(weeks=n) for n in range(1, 5)]
        return sum(d in pedidos for d in semanas) >= 2
    if periodo == Periodo.MES_ANTERIOR:
        ordem = _dia_util_do_mes(hoje)
        if ordem is None:
            return False
        mes = hoje.replace(day=1)
        for _ in range(2):
            mes = (mes - timedelta(days=1)).replace(day=1)
            mesmo_dia = _n_esimo_dia_util(mes, ordem)
            if mesmo_dia is not None and mesmo_dia in pedidos:
                return True
        return False
    return False


def _util(dia: date) -> bool:
    return dia.weekday() < 5


def _dia_util_do_mes(dia: date) -> int | None:
    """1 for the month's first working day, 2 for its second...; None on a
    weekend."""
    if not _util(dia):
        return None
    return sum(_util(dia.replace(day=n)) for n in range(1, dia.day + 1))


def _n_esimo_dia_util(mes: date, ordem: int) -> date | None:
    ultimo = calendar.monthrange(mes.year, mes.month)[1]
    uteis = [
        mes.replace(day=n) for n in range(1, ultimo + 1) if _util(mes.replace(day=n))
    ]
    return uteis[ordem - 1] if ordem <= len(uteis) else None


def _submeter(padrao: Padrao, hoje: date, agora: datetime | None) -> bool:
    inicio, fim = periodo_concreto(padrao.periodo, hoje)
    params = padrao.resto | {"inicio": inicio.isoformat(), "fim": fim.isoformat()}
    try:
        submissao = pedidos.submeter(
            tenant_id=padrao.tenant_id,
            tipo=padrao.tipo,
            params_brutos=params,
            usuario_id=None,
            antecipado=True,
        )
    except (tipos.TipoDesconhecido, ErroDeParametro, pedidos.LimiteDePendentes):
        # A type gone, a store deleted, the tenant's cap: not today.
        logger.info(
            "antecipação recusada",
            extra={
                "evento": "antecipacao_recusada",
                "tenant_id": padrao.tenant_id,
                "tipo": padrao.tipo,
                "periodo": padrao.periodo,
            },
            exc_info=True,
        )
        return False
    if submissao.criado and agora is not None:
        # A replay's pass (an explicit `agora`): the job counts as computed
        # ahead at that instant, so the precision's window sees it there.
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE relatorio_jobs SET antecipado_em = %s"
                " WHERE id = %s AND antecipado_em IS NOT NULL",
                [agora, submissao.job.id],
            )
    if submissao.criado:
        logger.info(
            "job antecipado",
            extra={
                "evento": "antecipado",
                "job_id": submissao.job.id,
                "tenant_id": padrao.tenant_id,
                "tipo": padrao.tipo,
                "periodo": padrao.periodo,
            },
        )
    return submissao.criado


@dataclass(frozen=True)
class Situacao:
    """A tenant's computing ahead as its managers and support see it."""

    ligado: bool
    indicador: IndicadorDeAntecipacao | None
    # Its patterns as the pass sees them now (none while it is off).
    padroes: list[Padrao]
    precisao_minima: float


def situacao(*, tenant_id: int) -> Situacao:
    ligado = Tenant.objects.filter(pk=tenant_id).values_list("antecipar", flat=True)
    return Situacao(
        ligado=bool(ligado.first()),
        indicador=IndicadorDeAntecipacao.objects.filter(tenant_id=tenant_id).first(),
        padroes=padroes(agora=agora_do_banco(), tenant_id=tenant_id),
        precisao_minima=settings.RELATORIOS_ANTECIPAR_PRECISAO_MINIMA,
    )


def ligar(*, tenant_id: int, ligado: bool) -> bool:
    """Turn computing ahead on or off for a tenant (its managers, support).
    Off, the pass submits nothing for it; jobs already computed ahead stay
    (a request still finds them). False if there is no such tenant."""
    feito = Tenant.objects.filter(pk=tenant_id).update(antecipar=ligado) == 1
    if feito:
        logger.info(
            "antecipação ligada" if ligado else "antecipação desligada",
            extra={"evento": "antecipacao_chave", "tenant_id": tenant_id},
        )
    return feito


def desligar_padrao(
    *, tenant_id: int, tipo: str, periodo: str, resto: Any, desligado: bool
) -> None:
    """Switch one pattern of a tenant off (or on again): the pass leaves it
    alone. Errors name the field (ErroDeParametro)."""
    if periodo not in PERIODOS:
        raise ErroDeParametro(
            "periodo", f"deve ser um de: {', '.join(str(p) for p in PERIODOS)}"
        )
    if tipo not in tipos.registro():
        raise ErroDeParametro("tipo", "tipo de relatório desconhecido")
    if not isinstance(resto, dict):
        raise ErroDeParametro("resto", "deve ser um objeto JSON")
    if desligado:
        PadraoDesligado.objects.get_or_create(
            tenant_id=tenant_id, tipo=tipo, periodo=periodo, resto=resto
        )
    else:
        PadraoDesligado.objects.filter(
            tenant_id=tenant_id, tipo=tipo, periodo=periodo, resto=resto
        ).delete()
