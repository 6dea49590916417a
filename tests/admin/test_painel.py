"""The operations dashboard (/admin/painel/): its aggregates over known data,
the indexes its statements use, and who may open it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django_q.models import OrmQ

from relatorios.admin import consultas_do_painel as consultas
from relatorios.admin import painel
from relatorios.models import (
    Agendamento,
    Alerta,
    Cluster,
    EstadoDoJob,
    EstadoOcorrencia,
    Ocorrencia,
    RelatorioTentativa,
    Tenant,
    Usuario,
    permissoes,
)
from relatorios.models.jobs import Agora
from tests import helpers
from tests.admin.test_admin import novo_job

PAINEL = "/admin/painel/"


def ha(**quanto: float) -> Any:
    """An instant of the database's clock (its now(), the one the dashboard's
    statements cut hours and days with), `quanto` ago."""
    return Agora() - timedelta(**quanto)


def concluido(tenant: Tenant, status: str, quando: Any, erro: str = "") -> int:
    return novo_job(
        tenant,
        status=status,
        criado_em=quando,
        concluido_em=quando,
        erro=erro or None,
        enfileirado_em=None,
    )


def tentativa(job_id: int, *, inicio: Any, fim: Any | None, numero: int = 1) -> None:
    RelatorioTentativa.objects.create(
        job_id=job_id, numero=numero, iniciado_em=inicio, terminado_em=fim
    )


def ocorrencia(
    agendamento: Agendamento,
    planejada: Any,
    *,
    conferida: bool = True,
    alerta: str | None = None,
    fechado_por: Usuario | None = None,
) -> None:
    """An occurrence; `alerta`: None (none), "aberto" or "fechado" (by
    `fechado_por`, or by the checker when the report arrived late)."""
    o = Ocorrencia.objects.create(
        agendamento=agendamento,
        tenant_id=agendamento.tenant_id,
        planejado_para=planejada,
        prazo_em=planejada,
        estado=EstadoOcorrencia.DISPARADA,
        conferida=conferida,
    )
    if alerta is not None:
        Alerta.objects.create(
            ocorrencia=o,
            tenant_id=agendamento.tenant_id,
            motivo="o prazo venceu com o relatório ainda na fila",
            fechado_em=Agora() if alerta == "fechado" else None,
            fechado_por=fechado_por,
        )


@dataclass
class Cenario:
    """What `montar_cenario` wrote, for the assertions."""

    rede_a: Tenant
    rede_b: Tenant
    suporte: Usuario


def montar_cenario(suporte: Usuario) -> Cenario:
    """A known week: finished jobs at known hours, failures with known
    reasons, a queue, worker time, a schedule's occurrences, a cluster."""
    a = helpers.criar_tenant("Rede A")
    b = helpers.criar_tenant("Rede B")
    # Rede A: two pronto and one failure 2 h ago, one pronto 30 h ago, a
    # retried failure 3 days ago, one pronto 8 days ago (outside the week).
    concluido(a, EstadoDoJob.PRONTO, ha(hours=2))
    concluido(a, EstadoDoJob.PRONTO, ha(hours=2))
    falho = concluido(
        a, EstadoDoJob.FALHOU, ha(hours=2), "ValueError: loja L9 sem dados"
    )
    concluido(a, EstadoDoJob.PRONTO, ha(hours=30))
    concluido(
        a,
        EstadoDoJob.FALHOU,
        ha(days=3),
        "conflito temporário no banco de dados (após 3 tentativas)",
    )
    concluido(a, EstadoDoJob.PRONTO, ha(days=8))
    # Rede B: a failure 1 h ago; the queue: one pending with its message,
    # one waiting 3 h for a slot, one running.
    concluido(b, EstadoDoJob.FALHOU, ha(hours=1), "ValueError: outra mensagem")
    novo_job(b)
    novo_job(b, criado_em=ha(hours=3), enfileirado_em=None)
    rodando = novo_job(b, status=EstadoDoJob.EXECUTANDO, iniciado_em=ha(minutes=20))
    # Worker time: A 10 min + 2 min (its failure's two attempts); B 20 min
    # so far (running); an attempt of A two days ago is outside the day.
    tentativa(falho, inicio=ha(hours=3), fim=ha(hours=2, minutes=50))
    tentativa(falho, inicio=ha(hours=2, minutes=2), fim=ha(hours=2), numero=2)
    tentativa(rodando, inicio=ha(minutes=20), fim=None)
    tentativa(falho, inicio=ha(days=2), fim=ha(days=1), numero=0)
    # Occurrences: today one on time, one late (its alert closed by the
    # checker), one still to settle; yesterday one missed (alert open) and
    # one closed by support (missed too); 20 days ago one (outside).
    agendamento = helpers.criar_agendamento(a, nome="Fechamento")
    ocorrencia(agendamento, ha(seconds=1))
    ocorrencia(agendamento, ha(seconds=2), alerta="fechado")
    ocorrencia(agendamento, ha(seconds=3), conferida=False)
    ocorrencia(agendamento, ha(days=1), alerta="aberto")
    ocorrencia(
        agendamento, ha(days=1, seconds=1), alerta="fechado", fechado_por=suporte
    )
    ocorrencia(agendamento, ha(days=20))
    Cluster.objects.create(host="worker-1", pid=101, versao="abc123")
    Cluster.objects.create(host="worker-2", pid=202, encerrado_em=Agora())
    return Cenario(rede_a=a, rede_b=b, suporte=suporte)


@pytest.fixture
def grupo_suporte(db: None) -> Group:
    return permissoes.criar_grupo_suporte()


@pytest.fixture
def suporte(grupo_suporte: Group) -> Usuario:
    usuario = helpers.criar_usuario(None, username="sofia", is_staff=True)[0]
    usuario.groups.add(grupo_suporte)
    return usuario


@pytest.fixture
def cenario(suporte: Usuario) -> Cenario:
    return montar_cenario(suporte)


def cliente_de(usuario: Usuario) -> Client:
    cliente = Client()
    cliente.force_login(usuario)
    return cliente


# --- The aggregates ------------------------------------------------------------


@pytest.mark.django_db
def test_concluidos_por_hora_nas_ultimas_24_h_e_7_dias(cenario: Cenario) -> None:
    semana = consultas.concluidos_por_hora(horas=168)
    dia = semana[-24:]

    assert len(semana) == 168
    assert semana[-1].inicio - semana[0].inicio == timedelta(hours=167)
    # 2 h ago: the third hour from the end (the current one is the last).
    assert (semana[-3].prontos, semana[-3].falhos) == (2, 1)
    assert (semana[-2].prontos, semana[-2].falhos) == (0, 1)
    assert (sum(h.prontos for h in dia), sum(h.falhos for h in dia)) == (2, 2)
    # The week adds the pronto of 30 h ago and the failure of 3 days ago,
    # not the pronto of 8 days ago.
    assert (sum(h.prontos for h in semana), sum(h.falhos for h in semana)) == (3, 3)
    assert semana[-31].prontos == 1


@pytest.mark.django_db
def test_falhas_agrupadas_por_motivo_com_as_demais_em_outros(
    cenario: Cenario,
) -> None:
    todas = consultas.falhas_por_motivo(limite=8)
    uma = consultas.falhas_por_motivo(limite=1)

    assert todas == [
        consultas.Motivo("ValueError", dia=2, semana=2),
        consultas.Motivo("conflito temporário no banco de dados", dia=0, semana=1),
    ]
    assert uma == [
        consultas.Motivo("ValueError", dia=2, semana=2),
        consultas.Motivo("outros", dia=0, semana=1),
    ]


@pytest.mark.django_db
def test_fila_agora(cenario: Cenario) -> None:
    fila = consultas.fila()

    assert (fila.pendentes, fila.aguardando_vaga, fila.executando) == (2, 1, 1)
    assert fila.mensagens == OrmQ.objects.count()
    assert fila.idade_do_mais_antigo_s == pytest.approx(3 * 3600, abs=5)


@pytest.mark.django_db
def test_ocorrencias_por_dia_no_prazo_atrasadas_perdidas(cenario: Cenario) -> None:
    dias = consultas.ocorrencias_por_dia(dias=14, fuso="America/Sao_Paulo")
    resumo = [(d.no_prazo, d.atrasadas, d.perdidas, d.a_conferir) for d in dias]

    assert len(dias) == 14
    assert dias[-1].dia - dias[0].dia == timedelta(days=13)
    assert resumo[-1] == (1, 1, 0, 1)
    assert resumo[-2] == (0, 0, 2, 0)
    assert resumo[:-2] == [(0, 0, 0, 0)] * 12


@pytest.mark.django_db
def test_tenants_por_jobs_e_por_tempo_de_worker(cenario: Cenario) -> None:
    por_jobs = consultas.tenants_por_jobs(limite=10)
    por_tempo = consultas.tenants_por_tempo(limite=10)
    so_o_primeiro = consultas.tenants_por_jobs(limite=1)

    # Created in the last 24 h: A's three of 2 h ago; B's four.
    assert [(c.nome, c.valor) for c in por_jobs] == [("Rede B", 4), ("Rede A", 3)]
    assert [c.nome for c in so_o_primeiro] == ["Rede B"]
    assert [c.nome for c in por_tempo] == ["Rede B", "Rede A"]
    assert por_tempo[0].valor == pytest.approx(20 * 60, abs=5)
    assert por_tempo[1].valor == pytest.approx(12 * 60)


@pytest.mark.django_db
def test_clusters_vivos_sem_os_encerrados(cenario: Cenario) -> None:
    assert [(c.host, c.pid) for c in consultas.clusters_vivos()] == [("worker-1", 101)]


@pytest.mark.django_db
def test_graficos_do_painel_tem_as_series_das_consultas(cenario: Cenario) -> None:
    dados = painel.montar("UTC").dados()

    assert list(dados) == [
        "concluidos_24h",
        "falhas",
        "concluidos_7d",
        "ocorrencias",
        "tenants_jobs",
        "tenants_tempo",
    ]
    assert [
        len(dados["concluidos_24h"]["rotulos"]),
        len(dados["concluidos_7d"]["rotulos"]),
    ] == [24, 168]
    assert [s["nome"] for s in dados["ocorrencias"]["series"]] == [
        "no prazo",
        "atrasadas",
        "perdidas",
        "a conferir",
    ]
    assert dados["tenants_tempo"]["rotulos"] == ["Rede B", "Rede A"]
    assert dados["tenants_tempo"]["series"][0]["valores"] == [20.0, 12.0]
    assert dados["tenants_tempo"]["unidade"] == "min"
    assert dados["falhas"]["series"][0]["valores"] == [2, 0]


# --- Bounded: each statement starts at an index --------------------------------

# The indexes the dashboard's statements need (seed 000's table holds
# millions of finished jobs; the ledger as many attempts). The failures may
# read relatorio_jobs_falhos or relatorio_jobs_concluidos: both start at the
# window.
INDICES = (
    "relatorio_jobs_concluidos",
    "relatorio_jobs_criado",
    "relatorio_tentativas_inicio",
    "relatorio_ocorr_planejadas",
)
TABELAS_GRANDES = (
    "relatorio_jobs",
    "relatorio_tentativas",
    "relatorio_ocorrencias",
    "relatorio_alertas",
)


@pytest.mark.django_db
def test_cada_consulta_do_painel_usa_um_indice(cenario: Cenario) -> None:
    with CaptureQueriesContext(connection) as capturadas:
        painel.montar("UTC")
    planos = []
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        for consulta in capturadas:
            cursor.execute(f"EXPLAIN {consulta['sql']}")
            planos.append("\n".join(linha for (linha,) in cursor.fetchall()))
        cursor.execute("RESET enable_seqscan")
    juntos = "\n".join(planos)

    # A few statements, whatever the data (the chunk store's scans its
    # table, which the per-tenant budgets keep small).
    assert len(capturadas) == 8
    assert [t for t in TABELAS_GRANDES if f"Seq Scan on {t}" in juntos] == []
    assert [i for i in INDICES if i not in juntos] == []


# --- Who opens it ----------------------------------------------------------------


@pytest.mark.django_db
def test_suporte_abre_o_painel(cenario: Cenario) -> None:
    resposta = cliente_de(cenario.suporte).get(PAINEL)
    html = resposta.content.decode()

    assert resposta.status_code == 200
    assert resposta.context["painel"].fila.pendentes == 2
    assert html.count("data-grafico-do-painel=") == 6
    assert 'id="dados-do-painel" type="application/json"' in html
    assert 'data-cluster="' in html
    assert "worker-1" in html
    assert "worker-2" not in html


@pytest.mark.django_db
def test_pagina_inicial_leva_ao_painel_so_quem_pode_ve_lo(
    suporte: Usuario,
) -> None:
    equipe = helpers.criar_usuario(None, username="equipe", is_staff=True)[0]

    do_suporte = cliente_de(suporte).get("/admin/").content.decode()
    da_equipe = cliente_de(equipe).get("/admin/").content.decode()

    assert 'href="/admin/painel/"' in do_suporte
    assert 'href="/admin/painel/"' not in da_equipe


@pytest.mark.django_db
def test_equipe_sem_a_permissao_recebe_403(db: None) -> None:
    equipe = helpers.criar_usuario(None, username="equipe", is_staff=True)[0]

    resposta = cliente_de(equipe).get(PAINEL)

    assert resposta.status_code == 403
    assert "dados-do-painel" not in resposta.content.decode()


@pytest.mark.django_db
def test_usuario_de_tenant_nunca_ve_o_painel_nem_com_a_permissao(
    grupo_suporte: Group,
) -> None:
    tenant = helpers.criar_tenant("Rede A")
    # Marked staff and in the group by mistake: still a tenant's user.
    gerente = helpers.criar_usuario(tenant, username="gerente", is_staff=True)[0]
    gerente.groups.add(grupo_suporte)

    resposta = cliente_de(gerente).get(PAINEL)
    anonimo = Client().get(PAINEL)

    assert resposta.status_code == 302
    assert resposta["Location"].startswith("/admin/login/")
    assert anonimo.status_code == 302
    assert anonimo["Location"].startswith("/admin/login/")


@pytest.mark.django_db
def test_o_grupo_suporte_so_le_o_painel(grupo_suporte: Group) -> None:
    do_painel = grupo_suporte.permissions.filter(codename__contains="painel")

    assert list(do_painel.values_list("codename", flat=True)) == ["ver_painel"]


# --- Its cost ---------------------------------------------------------------------


@pytest.mark.django_db
def test_reabrir_o_painel_logo_depois_nao_le_nada(
    cenario: Cenario, settings: Any
) -> None:
    settings.RELATORIOS_PAINEL_CACHE_S = 60
    primeiro = cliente_de(cenario.suporte).get(PAINEL)
    with CaptureQueriesContext(connection) as lidas:
        segundo = cliente_de(cenario.suporte).get(PAINEL)

    assert segundo.context["painel"] is primeiro.context["painel"]
    assert not [q for q in lidas.captured_queries if "relatorio_jobs" in q["sql"]]
    assert "Montado às" in segundo.content.decode()


@pytest.mark.django_db
def test_sem_validade_o_painel_e_montado_a_cada_abertura(
    cenario: Cenario, settings: Any
) -> None:
    settings.RELATORIOS_PAINEL_CACHE_S = 0
    primeiro = cliente_de(cenario.suporte).get(PAINEL)
    segundo = cliente_de(cenario.suporte).get(PAINEL)

    assert segundo.context["painel"] is not primeiro.context["painel"]


@pytest.mark.django_db(transaction=True)
def test_aberturas_simultaneas_montam_o_painel_uma_vez(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.RELATORIOS_PAINEL_CACHE_S = 60
    montagens: list[int] = []
    montar = painel.montar

    def contando(fuso: str) -> Any:
        montagens.append(1)
        time.sleep(0.5)  # a slow build: the others arrive while it runs
        return montar(fuso)

    monkeypatch.setattr(painel, "montar", contando)
    vistos: list[Any] = []

    def abrir() -> None:
        try:
            vistos.append(painel.montado("America/Sao_Paulo"))
        finally:
            connection.close()

    linhas = [threading.Thread(target=abrir) for _ in range(4)]
    for linha in linhas:
        linha.start()
    for linha in linhas:
        linha.join()

    assert len(montagens) == 1
    assert len(vistos) == 4
    assert all(v is vistos[0] for v in vistos)
