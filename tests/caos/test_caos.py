"""`make caos` in CI: a 60-second soak with a fixed seed; and the harness's own
promises (the seed replays the plan; the checks catch what they claim to)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from relatorios.agendamentos import agenda, alertas
from relatorios.models import (
    Agendamento,
    Entrega,
    EstadoEntrega,
    Ocorrencia,
    RelatorioJob,
)
from relatorios.notificacoes.canais.email.transporte import message_id
from relatorios.tipos.base import Contexto
from tests import helpers, processos, sse
from tests.agendamentos.test_entrega import disparada, pronto
from tests.caos import falhas, invariantes, razao
from tests.caos.amostras import AcimaDoLimite, Amostras
from tests.caos.carga import (
    AgendamentoDoSoak,
    Chamada,
    EventoDeAgendamento,
    FluxoDoSoak,
    Soak,
)
from tests.caos.falhas import Registro
from tests.caos.implantacao import Implantacao, TenantDoSoak
from tests.caos.parametros import Parametros
from tests.caos.receptores import CaixaIntermitente, Email

# A plan (over the 48 s after the calm 12) with every fault
# kind, two workers frozen past their lease (one for 13 s: a zombie the
# ledger sees) and no fault aimed at a target another one holds.
SEMENTE_DE_CI = 16176
TIPOS = falhas.habilitadas(replica=True)


def plano(semente: int, duracao_s: float = 480) -> list[falhas.FalhaPlanejada]:
    return falhas.planejar(
        semente=semente, duracao_s=duracao_s, intervalo_medio_s=3.0, tipos=TIPOS
    )


def test_a_mesma_semente_da_o_mesmo_plano_e_outra_semente_outro() -> None:
    assert plano(7) == plano(7)
    assert falhas.assinatura(plano(7)) == falhas.assinatura(plano(7))
    assert plano(7) != plano(8)


def test_dez_minutos_planejam_mais_de_cem_falhas_de_todos_os_tipos() -> None:
    # 10 minutes of load, the first fifth calm: 480 s of faults.
    dez_minutos = plano(31)

    assert len(dez_minutos) >= 100
    assert {f.tipo for f in dez_minutos} == set(TIPOS)


def test_sem_replica_o_plano_nao_tem_falhas_da_replica() -> None:
    tipos = falhas.habilitadas(replica=False)
    sem_replica = falhas.planejar(
        semente=31, duracao_s=480, intervalo_medio_s=3.0, tipos=tipos
    )

    assert not {f.tipo for f in sem_replica} & {
        "replica_reinicio",
        "replica_congelada",
        "replica_replay_pausado",
    }


def test_falha_num_cluster_ainda_ocupado_vai_para_o_proximo_livre() -> None:
    plano_ = plano(SEMENTE_DE_CI, 48)
    ocupado_ate: dict[str, float] = {}
    for falha in plano_:
        tipo = falhas.FALHAS[falha.tipo]
        if tipo.ocupa != "cluster":
            continue
        [chave] = tipo.chaves(falha, 3)
        assert ocupado_ate.get(chave, -1.0) < falha.em_s, falha
        extra = falhas.REINICIO_S if falha.tipo == "kill9_cluster" else 0
        ocupado_ate[chave] = falha.em_s + falha.duracao_s + extra


# --- the checks catch what they claim to ---------------------------------------------


@pytest.mark.parametrize(
    ("prontos", "disparada", "vista", "devido"),
    [
        # Pronto 10 s before the deadline (100), valid 20 s: in time.
        ([90.0], 80.0, 81.0, False),
        # The firing found a result that was still valid: in time.
        ([70.0], 80.0, 81.0, False),
        # Finished after the deadline: late.
        ([105.0], 80.0, 81.0, True),
        # The result the firing found had expired before it: late.
        ([50.0], 80.0, 81.0, True),
        # Fired after the deadline (the pass started before it).
        ([90.0], 99.0, 104.0, None),
        ([90.0], 103.0, 104.0, True),
        # Never seen fired by the samples: cannot say it was in time.
        ([90.0], 80.0, None, None),
        # Finished within FOLGA_S of the deadline: either is right.
        ([99.5], 80.0, 81.0, None),
        # Never pronto.
        ([], 80.0, 81.0, True),
    ],
)
def test_alerta_devido(
    prontos: list[float], disparada: float, vista: float | None, devido: bool | None
) -> None:
    assert invariantes._alerta_devido(prontos, disparada, vista, 100.0, 20.0) == devido


def agendamento(*eventos: EventoDeAgendamento) -> AgendamentoDoSoak:
    tenant = TenantDoSoak(1, 1, ["t"], ["e"], 1, pesado=False, agendado=True)
    return AgendamentoDoSoak(1, tenant, 4, 5.0, 100.0, list(eventos))


def test_janelas_do_agendamento_seguem_pausas_e_retomadas_que_valeram() -> None:
    a = agendamento(
        EventoDeAgendamento("pausar", 110.0, 110.5, True),
        EventoDeAgendamento("retomar", 115.0, 115.2, False),
        EventoDeAgendamento("retomar", 120.0, 120.3, True),
        EventoDeAgendamento("excluir", 130.0, 131.0, True),
    )

    devidos, ambiguos = invariantes._janelas(a)

    assert devidos == [(100.0, 110.0), (120.3, 130.0)]
    assert ambiguos == [(110.0, 110.5), (120.0, 120.3), (130.0, 131.0)]


def colheita(
    tmp_path: Path,
    *,
    url: str = "",
    chamadas: list[Chamada] | None = None,
    registros: list[Registro] | None = None,
) -> invariantes.Colheita:
    p = Parametros(duracao_s=60, semente=1, saida=tmp_path)
    impl = Implantacao(p, url=url)
    soak = Soak(impl, 1, chamadas=chamadas or [])
    return invariantes.Colheita(
        p=p,
        impl=impl,
        soak=soak,
        falhas=registros or [],
        amostras=Amostras(),
        marcos=invariantes.Marcos(0.0, 12.0, 60.0, 70.0, 5.0),
    )


def registro(tipo: str, inicio: float, fim: float, **campos: object) -> Registro:
    return Registro(
        n=1,
        tipo=tipo,
        planejada_s=0.0,
        inicio=inicio,
        fim=fim,
        pids=list(campos.pop("pids", [])),  # type: ignore[call-overload]
        detalhe="",
        webs=list(campos.pop("webs", [])),  # type: ignore[call-overload]
    )


def test_5xx_so_e_da_falha_na_mesma_web_e_na_janela(tmp_path: Path) -> None:
    c = colheita(
        tmp_path,
        chamadas=[
            Chamada("consultar", 1, "GET", "/a", 20.2, 20.4, 500),  # in its window
            Chamada("consultar", 2, "GET", "/b", 20.2, 20.4, 500),  # other web
            Chamada("consultar", 1, "GET", "/c", 30.0, 30.1, 502),  # after it
            Chamada("consultar", 1, "GET", "/d", 30.0, 30.1, None, "reset"),
            Chamada("consultar", 1, "GET", "/e", 30.0, 30.1, 200),
        ],
        registros=[registro("kill9_worker_web", 20.0, 20.0, webs=[1])],
    )

    erros, sem_resposta = invariantes.respostas_http(c)

    assert (erros.valor, sem_resposta.valor) == (2, 1)
    assert [e.split(" (")[0] for e in erros.exemplos] == ["GET /b", "GET /c"]


@pytest.fixture
def banco(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test database's URL (also the ledger's, here), with its table."""
    url = processos.ambiente()["DATABASE_URL"]
    monkeypatch.setenv("DATABASE_URL", url)
    with psycopg.connect(url, autocommit=True) as conexao:
        conexao.execute(razao.TABELA)
    yield url
    razao.fechar()
    with psycopg.connect(url, autocommit=True) as conexao:
        conexao.execute("DROP TABLE caos_razao")


def test_job_esquecido_pendente_e_falho_sem_motivo_sao_contados(
    banco: str, tmp_path: Path
) -> None:
    tenant = helpers.criar_tenant()
    for n, (status, erro) in enumerate(
        [("pendente", None), ("falhou", None), ("falhou", "x"), ("pronto", None)]
    ):
        RelatorioJob.objects.create(
            chave=f"k{n}",
            tenant=tenant,
            tipo="vendas",
            params={},
            status=status,
            erro=erro,
        )

    nao_finais, sem_motivo = invariantes.jobs_finais(colheita(tmp_path, url=banco))

    assert (nao_finais.valor, sem_motivo.valor) == (1, 1)


def test_o_razao_anota_quem_ainda_roda_o_mesmo_job(banco: str) -> None:
    """A second execution of a job's chunk while another process holds the
    job's ledger lock: the row names the holder (real advisory locks)."""
    tenant = helpers.criar_tenant()
    ctx = Contexto(job_id=424242, tenant_id=tenant.pk, fuso_horario="UTC")
    with psycopg.connect(
        banco, autocommit=True, application_name=f"{razao.PREFIXO}:99999"
    ) as outro:
        outro.execute(
            "SELECT pg_advisory_lock(%s, %s)", [razao.ESPACO_DO_JOB, ctx.job_id]
        )
        with razao.registrar(ctx, {"inicio": "2026-01-01"}):
            pass
        with psycopg.connect(banco) as conexao:
            [(conflito, fim)] = conexao.execute(
                "SELECT conflito_job, fim FROM caos_razao WHERE job_id = %s",
                [ctx.job_id],
            ).fetchall()

    assert conflito == f"{razao.PREFIXO}:99999"
    assert fim is not None


def test_execucao_concorrente_so_e_desculpada_por_um_worker_congelado(
    banco: str, tmp_path: Path
) -> None:
    agora = time.time()
    with psycopg.connect(banco, autocommit=True) as conexao:
        # pid 100 runs a chunk of job 7; pid 200 starts one while 100 holds it.
        for pid, inicio, fim, conflito in (
            (100, agora, agora + 12, None),
            (200, agora + 8, agora + 9, f"{razao.PREFIXO}:100"),
        ):
            conexao.execute(
                "INSERT INTO caos_razao (job_id, tenant_id, parte, pid, inicio, fim,"
                " conflito_job) VALUES (7, 1, '2026-01-01', %s, to_timestamp(%s),"
                " to_timestamp(%s), %s)",
                [pid, inicio, fim, conflito],
            )
    congelado = registro("sigstop_worker_cluster", agora + 1, agora + 10, pids=[100])
    congelado_tarde = registro(
        "sigstop_worker_cluster", agora + 8.5, agora + 10, pids=[100]
    )
    # An earlier freeze of the same pid, over before its chunk began.
    congelado_antes = registro(
        "sigstop_worker_cluster", agora - 60, agora - 50, pids=[100]
    )

    [sem_falha] = invariantes.execucoes_concorrentes(colheita(tmp_path, url=banco))
    [com_falha] = invariantes.execucoes_concorrentes(
        colheita(tmp_path, url=banco, registros=[congelado_antes, congelado])
    )
    [depois] = invariantes.execucoes_concorrentes(
        colheita(tmp_path, url=banco, registros=[congelado_antes, congelado_tarde])
    )

    assert (sem_falha.valor, com_falha.valor, depois.valor) == (1, 0, 1)


def test_ocorrencia_faltando_pausada_ou_fora_do_cron_e_contada(
    banco: str, tmp_path: Path
) -> None:
    tenant = helpers.criar_tenant()
    linha = helpers.criar_agendamento(tenant)
    base = 1_800_000_000.0  # a multiple of the 4 s step
    a = agendamento(
        EventoDeAgendamento("pausar", base + 10, base + 10.5, True),
        EventoDeAgendamento("retomar", base + 20, base + 20.3, True),
        EventoDeAgendamento("excluir", base + 30, base + 31, True),
    )
    a.id, a.criado = linha.pk, base
    # Owed: +4, +8, +24, +28. +8 is missing; +16 fired while paused; +25 is
    # off the cron.
    for segundos in (4, 16, 24, 25, 28):
        Ocorrencia.objects.create(
            agendamento=linha,
            tenant=tenant,
            planejado_para=datetime.fromtimestamp(base + segundos, UTC),
            estado="disparada",
            prazo_em=datetime.fromtimestamp(base + segundos + 5, UTC),
        )
    c = colheita(tmp_path, url=banco)
    c.marcos = invariantes.Marcos(base, base + 5, base + 31, base + 40, 5.0)
    c.soak.agendamentos.append(a)

    faltando, indevidas = invariantes.ocorrencias(c)

    assert (faltando.valor, indevidas.valor) == (1, 2)
    assert faltando.exemplos == [
        f"agendamento {linha.pk}: {int(base) + 8} sem ocorrência"
    ]


# --- the soak itself ------------------------------------------------------------------


@pytest.mark.processos
def agendado_entregue_por_email(tenant: Any) -> tuple[Ocorrencia, list[Entrega]]:
    """A fired schedule whose report is pronto, its email deliveries written."""
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    alertas.verificar()
    return ocorrencia, list(Entrega.objects.filter(ocorrencia=ocorrencia))


def test_link_servido_depois_de_excluido_o_agendamento_e_contado(
    banco: str, tmp_path: Path
) -> None:
    ocorrencia, entregas = agendado_entregue_por_email(helpers.criar_tenant())
    caminho = urlsplit(entregas[0].payload["data"]["download"]["url"]).path
    agenda.excluir(agendamento_id=ocorrencia.agendamento_id)
    excluido = Agendamento.objects.get(pk=ocorrencia.agendamento_id).excluido_em
    assert excluido is not None
    t = excluido.timestamp()
    c = colheita(
        tmp_path,
        url=banco,
        chamadas=[
            Chamada("baixar", 1, "GET", caminho, t - 10, t - 9.9, 200),  # before
            Chamada("baixar", 1, "GET", caminho, t + 0.5, t + 0.6, 200),  # racing it
            Chamada("baixar", 1, "GET", caminho, t + 5, t + 5.1, 410),
            Chamada("baixar", 2, "GET", caminho, t + 6, t + 6.1, 200),  # served!
        ],
    )

    [servido] = invariantes.links_revogados(c)

    assert servido.valor == 1
    assert "(2 such downloads: 1× 200, 1× 410)" in servido.prova


def test_emails_sao_casados_pelo_message_id_da_entrega(
    banco: str, tmp_path: Path
) -> None:
    _, entregas = agendado_entregue_por_email(helpers.criar_tenant())
    Entrega.objects.update(estado=EstadoEntrega.ENTREGUE, tentativas=1)
    copiada, perdida = sorted(entregas, key=lambda e: e.destinatarios[0])
    c = colheita(tmp_path, url=banco)
    smtp = CaixaIntermitente()
    smtp.parar()
    c.impl.smtp = smtp

    def email(destino: str, message_id: str) -> Email:
        return Email(0.0, (destino,), "Relatório", message_id)

    smtp.emails += [
        email(copiada.destinatarios[0], message_id(copiada.mensagem_id)),
        email(copiada.destinatarios[0], message_id(copiada.mensagem_id)),
        email(perdida.destinatarios[0], "<outra@localhost>"),  # not its id
    ]

    perdidos, alem, estranhos, repetidos = invariantes.emails(c)

    assert (perdidos.valor, alem.valor, estranhos.valor) == (1, 1, 1)
    assert perdida.destinatarios[0] in perdidos.exemplos[0]
    assert (repetidos.valor, repetidos.informativo) == (1, True)


def test_entregas_acima_das_vagas_amostradas_sao_contadas(tmp_path: Path) -> None:
    c = colheita(tmp_path)
    c.amostras.entregas_acima.append(AcimaDoLimite(1.0, 7, 3))

    [acima] = invariantes.entregas_nas_vagas(c)

    assert (acima.valor, acima.exemplos) == (1, ["tenant 7: 3 entregas em voo"])


def fluxo_visto(
    tenant: int, de: float, ate: float, *eventos: Any, **campos: Any
) -> Any:
    """A stream the listener held, with the events it read."""
    lido = sse.Fluxo(url="", cabecalhos={}, status=200)
    lido.eventos = [sse.EventoRecebido(str(i), t, d) for i, t, d in eventos]
    return FluxoDoSoak(tenant, de, campos.get("retomado_de"), lido, de, ate)


def pronto_em(job_id: int, instante: datetime) -> tuple[str, str, dict[str, Any]]:
    dados = {"id": job_id, "concluido_em": instante.isoformat()}
    return ("job.pronto", "job.pronto", {"data": dados})


def test_final_nao_visto_no_fluxo_aberto_e_ids_que_voltam_sao_contados(
    banco: str, tmp_path: Path
) -> None:
    tenant = helpers.criar_tenant()
    agora = datetime.now(UTC)
    t = agora.timestamp()
    visto, perdido, antes = (
        RelatorioJob.objects.create(
            chave=f"k{n}",
            tenant=tenant,
            tipo="vendas",
            params={},
            status="pronto",
            concluido_em=agora + timedelta(seconds=s),
        )
        for n, s in enumerate((0, 30, -60))
    )
    c = colheita(tmp_path, url=banco)
    (_, ev_visto, dados_visto) = pronto_em(visto.pk, visto.concluido_em)
    c.soak.fluxos = [
        fluxo_visto(tenant.pk, t - 10, t + 5, ("7", ev_visto, dados_visto)),
        # Resumed after id 7: the job pronto at t + 30 should be on it.
        fluxo_visto(
            tenant.pk, t + 6, t + 60, ("5", "job.executando", {}), retomado_de="7"
        ),
    ]

    perdidos, fora_de_ordem, lacunas = invariantes.eventos_ao_vivo(c)

    assert (perdidos.valor, fora_de_ordem.valor, lacunas.valor) == (1, 1, 0)
    assert f"job {perdido.pk} " in perdidos.exemplos[0]
    assert antes.pk not in {visto.pk, perdido.pk}  # before any stream: not judged
    assert "each of 2 jobs' final states" in perdidos.prova


def test_sessenta_segundos_de_caos_mantem_todas_as_invariantes() -> None:
    saida = processos.RAIZ / "test-output" / "caos-ci"
    shutil.rmtree(saida, ignore_errors=True)
    args = ["--duracao", "60s", "--semente", str(SEMENTE_DE_CI)]

    execucao = subprocess.run(
        [sys.executable, "-m", "tests.caos", *args, "--saida", str(saida)],
        cwd=processos.RAIZ,
        capture_output=True,
        text=True,
        timeout=1500,
    )

    relatorio = json.loads((saida / "relatorio.json").read_text())
    violadas = {
        f["nome"]: f["exemplos"]
        for f in relatorio["invariantes"]
        if f["valor"] and not f["informativo"]
    }
    assert violadas == {}, execucao.stdout[-6000:]
    assert relatorio["erros_do_harness"] == []
    assert execucao.returncode == 0, execucao.stdout[-3000:] + execucao.stderr[-3000:]
    # The seed replays the plan; at most a few faults found no live target.
    esperado = plano(SEMENTE_DE_CI, 48)
    assert relatorio["plano_sha256"] == falhas.assinatura(esperado)
    assert relatorio["falhas_injetadas"] >= len(esperado) - 4
