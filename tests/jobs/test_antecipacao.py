from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from relatorios.jobs import antecipacao, pedidos
from relatorios.models import (
    EstadoDoJob,
    IndicadorDeAntecipacao,
    Periodo,
    RelatorioJob,
    Tenant,
)
from relatorios.tipos import normalizacao
from relatorios.tipos.normalizacao import ErroDeParametro
from relatorios.tipos.periodos import periodo_concreto
from tests import processos

FUSO = ZoneInfo("America/Sao_Paulo")


def local(dia: date, hora: time = time(8, 0)) -> datetime:
    return datetime.combine(dia, hora, tzinfo=FUSO)


def params(inicio: date, fim: date, **resto: Any) -> dict[str, Any]:
    return {
        "inicio": inicio.isoformat(),
        "fim": fim.isoformat(),
        "agrupar": "dia",
        "lojas": [],
    } | resto


def pedido(
    tenant: Tenant,
    quando: datetime,
    periodo: str | tuple[date, date],
    *,
    antecipado_em: datetime | None = None,
    pedido_em: datetime | str | None = "quando",
    status: str = EstadoDoJob.PRONTO,
    expira_em: datetime | None = None,
    tipo: str = "vendas",
    **resto: Any,
) -> RelatorioJob:
    """A job as the history holds it: asked at `quando` (local) for a period
    relative to that day, or for a fixed range."""
    dia = (antecipado_em or quando).astimezone(FUSO).date()
    inicio, fim = (
        periodo_concreto(periodo, dia) if isinstance(periodo, str) else periodo
    )
    p = params(inicio, fim, **resto)
    return RelatorioJob.objects.create(
        chave=normalizacao.chave(tenant.pk, tipo, p),
        tenant=tenant,
        tipo=tipo,
        params=p,
        status=status,
        pedido_em=quando if pedido_em == "quando" else pedido_em,
        antecipado_em=antecipado_em,
        concluido_em=(antecipado_em or quando) + timedelta(minutes=1),
        expira_em=expira_em or (antecipado_em or quando) + timedelta(days=1),
    )


def antecipados(tenant: Tenant) -> list[tuple[str, str]]:
    return sorted(
        (j.params["inicio"], j.params["fim"])
        for j in RelatorioJob.objects.filter(
            tenant=tenant, antecipado_em__isnull=False, pedido_em__isnull=True
        )
    )


# Monday 2026-03-02 is the first working day of March 2026 (the 1st is a
# Sunday); the week before runs Monday 02-23 to Sunday 03-01.
SEG = date(2026, 3, 2)


def dias_uteis_antes(dia: date, n: int) -> list[date]:
    saida: list[date] = []
    while len(saida) < n:
        dia -= timedelta(days=1)
        if dia.weekday() < 5:
            saida.append(dia)
    return saida


def dias_antes(dia: date, n: int) -> list[date]:
    return [dia - timedelta(days=k) for k in range(1, n + 1)]


CASOS = [
    # (name, [(local day, period)], agora (local), expected [(inicio, fim)])
    (
        "ontem todo dia útil, numa segunda",
        [(d, Periodo.ONTEM) for d in dias_uteis_antes(SEG, 5)],
        local(SEG, time(7, 30)),
        [("2026-03-01", "2026-03-01")],
    ),
    (
        "ontem todo dia útil: não no sábado",
        [(d, Periodo.ONTEM) for d in dias_uteis_antes(date(2026, 3, 7), 5)],
        local(date(2026, 3, 7), time(7, 30)),
        [],
    ),
    (
        "ontem todo dia: também no sábado",
        [(d, Periodo.ONTEM) for d in dias_antes(date(2026, 3, 7), 14)],
        local(date(2026, 3, 7), time(7, 30)),
        [("2026-03-06", "2026-03-06")],
    ),
    (
        "ontem só 2 dos 5 dias úteis: ad hoc",
        [(d, Periodo.ONTEM) for d in dias_uteis_antes(SEG, 5)[:2]],
        local(SEG, time(7, 30)),
        [],
    ),
    (
        "cedo demais: uma hora antes da primeira hora pedida",
        [(d, Periodo.ONTEM) for d in dias_uteis_antes(SEG, 5)],
        local(SEG, time(6, 59)),
        [],
    ),
    (
        "semana anterior toda segunda",
        [(SEG - timedelta(weeks=n), Periodo.SEMANA_ANTERIOR) for n in (1, 2, 3)],
        local(SEG, time(7, 30)),
        [("2026-02-23", "2026-03-01")],
    ),
    (
        "semana anterior toda segunda: não na terça",
        [(SEG - timedelta(weeks=n), Periodo.SEMANA_ANTERIOR) for n in (1, 2, 3)],
        local(SEG + timedelta(days=1), time(7, 30)),
        [],
    ),
    (
        "mês anterior no primeiro dia útil",
        [(date(2026, 2, 2), Periodo.MES_ANTERIOR)],
        local(SEG, time(7, 30)),
        [("2026-02-01", "2026-02-28")],
    ),
    (
        "mês anterior no primeiro dia útil: não no segundo",
        [(date(2026, 2, 2), Periodo.MES_ANTERIOR)],
        local(SEG + timedelta(days=1), time(7, 30)),
        [],
    ),
    (
        "mês corrente até ontem todo dia útil",
        [
            (d, Periodo.MES_CORRENTE_ATE_ONTEM)
            for d in dias_uteis_antes(date(2026, 3, 11), 5)
        ],
        local(date(2026, 3, 11), time(7, 30)),
        [("2026-03-01", "2026-03-10")],
    ),
    (
        "faixas fixas (ad hoc) nunca",
        [
            (d, (d - timedelta(days=9), d - timedelta(days=3)))
            for d in dias_antes(SEG, 10)
        ],
        local(SEG, time(7, 30)),
        [],
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("historico", "agora", "esperado"),
    [c[1:] for c in CASOS],
    ids=[c[0] for c in CASOS],
)
def test_padroes_do_historico(
    tenant: Tenant,
    historico: list[tuple[date, Any]],
    agora: datetime,
    esperado: list[tuple[str, str]],
) -> None:
    for dia, periodo in historico:
        pedido(tenant, local(dia, time(8, 0)), periodo)

    criados = antecipacao.antecipar(agora=agora)

    assert antecipados(tenant) == esperado
    assert criados == len(esperado)


@pytest.mark.django_db
@pytest.mark.parametrize("periodo", antecipacao.PERIODOS)
def test_sql_reconhece_os_periodos_como_os_agendamentos(
    tenant: Tenant, periodo: str
) -> None:
    # Every day of a year, the range a schedule fires for the period is
    # recognized as a period of that range.
    dias = [date(2026, 1, 1) + timedelta(days=n) for n in range(0, 365, 1)]
    for n, dia in enumerate(dias):
        pedido(tenant, local(dia), periodo, n=n)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT d, {antecipacao._CLASSIFICAR}
              FROM (SELECT (params ->> 'inicio')::date AS inicio,
                           (params ->> 'fim')::date AS fim,
                           (pedido_em AT TIME ZONE 'America/Sao_Paulo')::date AS d
                      FROM relatorio_jobs WHERE tenant_id = %s) AS q
            """,
            [tenant.pk],
        )
        vistos = dict(cursor.fetchall())

    # Where two periods have the same range on a day (this month up to
    # yesterday is yesterday on the 2nd, last month on the 1st, last week
    # when the 1st was a Monday), the first in PERIODOS names it: the same
    # range either way, so the same job.
    errados = {
        d: p
        for d, p in vistos.items()
        if p is None or periodo_concreto(p, d) != periodo_concreto(periodo, d)
    }
    assert len(vistos) == len(dias)
    assert errados == {}
    assert sum(p == periodo for p in vistos.values()) > len(dias) * 0.8


@pytest.mark.parametrize(
    ("periodo", "dias", "hoje", "devido"),
    [
        (Periodo.ONTEM, dias_uteis_antes(SEG, 3), SEG, True),
        (Periodo.ONTEM, dias_uteis_antes(SEG, 5)[::2], SEG, True),
        (Periodo.ONTEM, dias_uteis_antes(SEG, 5)[:2], SEG, False),
        (Periodo.ONTEM, dias_uteis_antes(SEG, 5), date(2026, 3, 1), False),
        (Periodo.SEMANA_ANTERIOR, [SEG - timedelta(weeks=4)], SEG, False),
        (
            Periodo.SEMANA_ANTERIOR,
            [SEG - timedelta(weeks=2), SEG - timedelta(weeks=4)],
            SEG,
            True,
        ),
        (Periodo.MES_ANTERIOR, [date(2026, 1, 1)], SEG, True),
        (Periodo.MES_ANTERIOR, [date(2025, 12, 1)], SEG, False),
        (Periodo.MES_ANTERIOR, [date(2026, 2, 2)], date(2026, 3, 1), False),
        (Periodo.ANO_ANTERIOR, [date(2025, 1, 2)], date(2026, 1, 2), False),
    ],
)
def test_devido(periodo: str, dias: list[date], hoje: date, devido: bool) -> None:
    assert antecipacao.devido(periodo, dias, hoje) is devido


def _diario(tenant: Tenant) -> None:
    for d in dias_uteis_antes(SEG, 5):
        pedido(tenant, local(d), Periodo.ONTEM)


@pytest.mark.django_db
def test_segunda_passada_nao_submete_de_novo(tenant: Tenant) -> None:
    _diario(tenant)
    assert antecipacao.antecipar(agora=local(SEG)) == 1
    assert antecipacao.antecipar(agora=local(SEG)) == 0
    assert len(antecipados(tenant)) == 1


@pytest.mark.django_db
def test_ja_pedido_hoje_nao_e_antecipado(tenant: Tenant) -> None:
    _diario(tenant)
    pedido(tenant, local(SEG, time(6, 0)), Periodo.ONTEM)
    assert antecipacao.antecipar(agora=local(SEG)) == 0


@pytest.mark.django_db
def test_desligado_pelo_ajuste(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_ANTECIPAR = False
    _diario(tenant)
    assert antecipacao.antecipar(agora=local(SEG)) == 0
    assert antecipados(tenant) == []


@pytest.mark.django_db
def test_desligado_para_o_tenant(tenant: Tenant, outro_tenant: Tenant) -> None:
    _diario(tenant)
    _diario(outro_tenant)
    Tenant.objects.filter(pk=tenant.pk).update(antecipar=False)

    assert antecipacao.antecipar(agora=local(SEG)) == 1
    assert antecipados(tenant) == []
    assert len(antecipados(outro_tenant)) == 1


@pytest.mark.django_db
def test_job_antecipado_espera_sem_mensagem_e_e_marcado(tenant: Tenant) -> None:
    _diario(tenant)
    # A person's job waits in the queue: the capacity is not idle, so the
    # pass's dispatch gives the job computed ahead no message.
    pessoa = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos=params(SEG, SEG),
        usuario_id=None,
    )
    antecipacao.antecipar(agora=local(SEG))

    job = RelatorioJob.objects.get(tenant=tenant, pedido_em__isnull=True)
    assert job.antecipado_em == local(SEG)
    assert job.status == EstadoDoJob.PENDENTE
    assert job.enfileirado_em is None
    assert RelatorioJob.objects.get(pk=pessoa.job.id).enfileirado_em is not None


@pytest.mark.django_db
def test_pedido_de_uma_pessoa_marca_o_antecipado_uma_vez(tenant: Tenant) -> None:
    _diario(tenant)
    antecipacao.antecipar(agora=local(SEG))
    job = RelatorioJob.objects.get(tenant=tenant, pedido_em__isnull=True)

    primeira = pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=job.params, usuario_id=None
    )
    marcado = RelatorioJob.objects.get(pk=job.pk).pedido_em
    segunda = pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=job.params, usuario_id=None
    )

    assert (primeira.job.id, segunda.job.id) == (job.pk, job.pk)
    assert not primeira.criado
    assert marcado is not None
    assert RelatorioJob.objects.get(pk=job.pk).pedido_em == marcado


@pytest.mark.django_db
def test_antecipado_pedido_por_uma_pessoa_ganha_mensagem(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    # Another tenant's person job waits in the queue: the job computed ahead
    # waits without a message until someone asks for it; then it is a
    # person's job, dispatched at once.
    p = params(SEG, SEG)
    antecipado = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos=p,
        usuario_id=None,
        antecipado=True,
    ).job.id
    pedidos.submeter(
        tenant_id=outro_tenant.pk,
        tipo="vendas",
        params_brutos=p,
        usuario_id=None,
    )
    assert RelatorioJob.objects.get(pk=antecipado).enfileirado_em is None

    pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=p, usuario_id=None
    )

    job = RelatorioJob.objects.get(pk=antecipado)
    assert job.pedido_em is not None
    assert job.enfileirado_em is not None


@pytest.mark.django_db
def test_precisao_e_recall(tenant: Tenant) -> None:
    agora = local(SEG, time(12, 0))
    ontem = local(SEG - timedelta(days=1), time(5, 0))
    # Computed ahead: 3 asked for (2 after they were ready, 1 while running),
    # 1 expired unasked, 1 still valid unasked (not settled).
    for n, pedido_h in enumerate((6, 7, 9)):
        job = pedido(
            tenant,
            ontem,
            (date(2025, 1, n + 1), date(2025, 1, n + 1)),
            antecipado_em=ontem,
            pedido_em=ontem.replace(hour=pedido_h),
        )
        if pedido_h == 6:
            # Asked for before it finished (07:01): not answered at once.
            RelatorioJob.objects.filter(pk=job.pk).update(
                concluido_em=ontem.replace(hour=7, minute=1)
            )
    pedido(
        tenant,
        ontem,
        (date(2025, 2, 1), date(2025, 2, 1)),
        antecipado_em=ontem - timedelta(days=2),
        pedido_em=None,
    )
    pedido(
        tenant,
        ontem,
        (date(2025, 2, 2), date(2025, 2, 2)),
        antecipado_em=ontem,
        pedido_em=None,
        expira_em=agora + timedelta(hours=1),
    )
    # Asked for and computed on demand: 2.
    pedido(tenant, ontem, (date(2025, 3, 1), date(2025, 3, 1)))
    pedido(tenant, ontem, (date(2025, 3, 2), date(2025, 3, 2)))

    antecipacao.medir(agora=agora)

    indicador = IndicadorDeAntecipacao.objects.get(tenant=tenant)
    assert (indicador.assentados, indicador.aproveitados) == (4, 3)
    assert (indicador.pedidos, indicador.imediatos) == (5, 2)
    assert indicador.precisao == 0.75
    assert indicador.recall == 0.4


@pytest.mark.django_db
def test_padrao_de_baixa_precisao_para_sozinho(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_ANTECIPAR_PRECISAO_MINIMA = 0.5
    _diario(tenant)
    # The pattern was computed ahead on 3 days of the week before and nobody
    # asked.
    for d in dias_uteis_antes(SEG, 10)[5:8]:
        pedido(
            tenant,
            local(d),
            Periodo.ONTEM,
            antecipado_em=local(d, time(6, 0)),
            pedido_em=None,
            expira_em=local(d, time(6, 0)) + timedelta(hours=2),
        )

    assert antecipacao.antecipar(agora=local(SEG)) == 0
    assert IndicadorDeAntecipacao.objects.get(tenant=tenant).padroes_parados == 1


@pytest.mark.django_db
def test_padrao_de_boa_precisao_continua(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_ANTECIPAR_PRECISAO_MINIMA = 0.5
    for d in dias_uteis_antes(SEG, 5):
        # Computed ahead at 06:00 and asked for at 08:00, each day.
        pedido(tenant, local(d), Periodo.ONTEM, antecipado_em=local(d, time(6, 0)))

    assert antecipacao.antecipar(agora=local(SEG)) == 1
    assert IndicadorDeAntecipacao.objects.get(tenant=tenant).padroes_parados == 0


@pytest.mark.parametrize(
    ("ambiente", "mensagem"),
    [
        (
            {"RELATORIOS_ANTECIPAR": "talvez"},
            "RELATORIOS_ANTECIPAR='talvez' is not a switch",
        ),
        ({"RELATORIOS_ANTECIPAR_S": "0"}, "RELATORIOS_ANTECIPAR_S must be > 0"),
        (
            {"RELATORIOS_ANTECIPAR_PRECISAO_MINIMA": "1.5"},
            "RELATORIOS_ANTECIPAR_PRECISAO_MINIMA must be between 0 and 1",
        ),
        (
            {"RELATORIOS_ANTECIPAR_MAX_EXECUTANDO": "0"},
            "RELATORIOS_ANTECIPAR_MAX_EXECUTANDO must be >= 1",
        ),
        (
            {"RELATORIOS_ANTECIPAR_ANTECEDENCIA_S": "-1"},
            "RELATORIOS_ANTECIPAR_ANTECEDENCIA_S must be between 0 and 86400",
        ),
    ],
)
def test_ajuste_invalido_nao_sobe(ambiente: dict[str, str], mensagem: str) -> None:
    resultado = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=processos.RAIZ,
        env={**os.environ, **ambiente},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert resultado.returncode != 0
    assert mensagem in resultado.stderr


@pytest.mark.django_db
def test_precisao_e_recall_nas_metricas(tenant: Tenant) -> None:
    from relatorios.operacao import metricas

    IndicadorDeAntecipacao.objects.create(
        tenant=tenant,
        assentados=4,
        aproveitados=3,
        pedidos=10,
        imediatos=7,
        padroes_parados=1,
        calculado_em=local(SEG),
    )

    amostras = {
        (a.name, tuple(a.labels.values())): a.value
        for familia in metricas.EstadoDoBanco().collect()
        for a in familia.samples
        if a.name.startswith("relatorios_antecipacao")
    }

    rotulo = (str(tenant.pk),)
    assert amostras == {
        ("relatorios_antecipacao_precisao", rotulo): 0.75,
        ("relatorios_antecipacao_recall", rotulo): 0.7,
        ("relatorios_antecipacao_padroes_parados", rotulo): 1,
    }


def _rotinas(settings: Any, ligado: bool) -> dict[str, Any]:
    from relatorios.management.commands import qcluster

    settings.RELATORIOS_ANTECIPAR = ligado
    settings.RELATORIOS_ANTECIPAR_S = 123.0
    return {r.nome: r for r in qcluster.rotinas(None)}  # type: ignore[arg-type]


def test_cada_cluster_roda_a_passada_periodicamente(settings: Any) -> None:
    rotina = _rotinas(settings, True)["antecipação"]

    assert (rotina.intervalo_s, rotina.executar) == (123.0, antecipacao.antecipar)


def test_sem_o_ajuste_nenhuma_passada_roda(settings: Any) -> None:
    assert "antecipação" not in _rotinas(settings, False)


@pytest.mark.django_db(transaction=True)
def test_passadas_simultaneas_submetem_cada_relatorio_uma_vez(tenant: Tenant) -> None:
    # Two clusters' passes at the same instant: the submit's dedup by chave
    # lets one create each job.
    _diario(tenant)
    barreira = threading.Barrier(2)
    criados: list[int] = []

    def passada() -> None:
        try:
            barreira.wait()
            criados.append(antecipacao.antecipar(agora=local(SEG)))
        finally:
            connection.close()

    linhas = [threading.Thread(target=passada) for _ in range(2)]
    for linha in linhas:
        linha.start()
    for linha in linhas:
        linha.join()

    assert sorted(criados) == [0, 1]
    assert len(antecipados(tenant)) == 1


@pytest.mark.django_db
def test_submissao_antecipada_nao_conta_como_pedido(tenant: Tenant) -> None:
    from prometheus_client import REGISTRY

    def novos() -> float:
        return (
            REGISTRY.get_sample_value(
                "relatorios_submissoes_total", {"tipo": "vendas", "desfecho": "novo"}
            )
            or 0.0
        )

    antes = novos()
    _diario(tenant)
    assert antecipacao.antecipar(agora=local(SEG)) == 1
    assert novos() == antes


@pytest.mark.django_db
def test_padrao_desligado_nao_e_antecipado_e_pode_voltar(tenant: Tenant) -> None:
    _diario(tenant)
    resto = {"agrupar": "dia", "lojas": []}
    antecipacao.desligar_padrao(
        tenant_id=tenant.pk,
        tipo="vendas",
        periodo=Periodo.ONTEM,
        resto=resto,
        desligado=True,
    )
    desligado = antecipacao.antecipar(agora=local(SEG))
    antecipacao.desligar_padrao(
        tenant_id=tenant.pk,
        tipo="vendas",
        periodo=Periodo.ONTEM,
        resto=resto,
        desligado=False,
    )

    assert desligado == 0
    assert antecipacao.antecipar(agora=local(SEG)) == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("campos", "campo"),
    [
        ({"periodo": "amanha"}, "periodo"),
        ({"tipo": "inexistente"}, "tipo"),
        ({"resto": ["lojas"]}, "resto"),
    ],
)
def test_desligar_padrao_invalido_nomeia_o_campo(
    tenant: Tenant, campos: dict[str, Any], campo: str
) -> None:
    argumentos: dict[str, Any] = {
        "tipo": "vendas",
        "periodo": Periodo.ONTEM,
        "resto": {},
    } | campos
    with pytest.raises(ErroDeParametro) as erro:
        antecipacao.desligar_padrao(tenant_id=tenant.pk, desligado=True, **argumentos)

    assert erro.value.campo == campo
