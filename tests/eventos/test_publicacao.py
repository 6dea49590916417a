"""What the database publishes (migrations 0027, 0030), read back from its
table and from a real reader (`eventos.central.Central`) in this process,
with real concurrent connections for the commits that overlap."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from relatorios.eventos import leitura
from relatorios.jobs import pedidos
from relatorios.models import EventoPublicado, RelatorioJob, Tenant
from tests import helpers, processos
from tests.eventos.leitor import DEPOIS_DO_EVENTO, Leitor

pytestmark = pytest.mark.django_db(transaction=True)


def submeter(tenant: Tenant, fim: str = "2026-01-31") -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="teste_lento",
        params_brutos={"inicio": "2026-01-01", "fim": fim},
        usuario_id=None,
    ).job.id


def tipos(job_id: int) -> list[tuple[str, int]]:
    return [
        (e.tipo, e.dados["progresso"])
        for e in EventoPublicado.objects.filter(job_id=job_id).order_by("id")
    ]


def test_so_mudancas_de_estado_ou_progresso_publicam(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    RelatorioJob.objects.filter(pk=job_id).update(heartbeat_em=Now())
    RelatorioJob.objects.filter(pk=job_id).update(progresso=0)
    RelatorioJob.objects.filter(pk=job_id).update(status="executando")
    RelatorioJob.objects.filter(pk=job_id).update(progresso=40)

    assert tipos(job_id) == [
        ("job.pendente", 0),
        ("job.executando", 0),
        ("job.executando", 40),
    ]


def test_mudanca_desfeita_nao_e_publicada_nem_anunciada(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_EVENTOS_ESPERA_LACUNA_S = 30
    with Leitor(tenant.pk) as leitor:
        job_id = submeter(tenant)
        with transaction.atomic():
            RelatorioJob.objects.filter(pk=job_id).update(progresso=10)
            transaction.set_rollback(True)
        RelatorioJob.objects.filter(pk=job_id).update(progresso=20)
        helpers.esperar(
            lambda: len(leitor.recebidos) == 2, descricao="os eventos confirmados"
        )
        time.sleep(0.5)  # a few reads later, still only those

    assert tipos(job_id) == [("job.pendente", 0), ("job.pendente", 20)]
    assert [(a.job_id, a.dados["progresso"]) for a, _ in leitor.recebidos] == [
        (job_id, 0),
        (job_id, 20),
    ]
    assert leitor.ids()[-1] == EventoPublicado.objects.latest("id").id


def test_ids_seguem_a_ordem_dos_commits(tenant: Tenant) -> None:
    primeiro, segundo = submeter(tenant), submeter(tenant, fim="2026-02-28")
    dsn = processos.ambiente()["DATABASE_URL"]
    with psycopg.connect(dsn) as lenta, psycopg.connect(dsn) as rapida:
        # The slow transaction changes its job first but commits last.
        lenta.execute(
            "UPDATE relatorio_jobs SET progresso = 1 WHERE id = %s", [primeiro]
        )
        rapida.execute(
            "UPDATE relatorio_jobs SET progresso = 2 WHERE id = %s", [segundo]
        )
        rapida.commit()
        lenta.commit()
    ultimos = list(EventoPublicado.objects.order_by("-id")[:2])

    assert [(e.job_id, e.dados["progresso"]) for e in reversed(ultimos)] == [
        (segundo, 2),
        (primeiro, 1),
    ]


def test_retomar_depois_de_um_id_e_a_lacuna_alem_da_retencao(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    for progresso in (10, 20, 30):
        RelatorioJob.objects.filter(pk=job_id).update(progresso=progresso)
    ids = [e.id for e in EventoPublicado.objects.filter(job_id=job_id).order_by("id")]
    retomada = leitura.retomar(tenant_id=tenant.pk, apos=ids[1], ate=None)
    EventoPublicado.objects.filter(id__in=ids[:2]).update(
        criado_em=timezone.now() - timedelta(hours=2)
    )
    expurgados = leitura.expurgar()
    depois = leitura.retomar(tenant_id=tenant.pk, apos=ids[1], ate=None)

    assert [e.id for e in retomada.eventos] == ids[2:]
    assert retomada.conhecido is True
    assert retomada.ultimo == ids[-1]
    assert expurgados == 2
    assert depois.conhecido is False
    assert [e.id for e in depois.eventos] == ids[2:]


def test_alerta_aberto_e_fechado_sao_publicados(tenant: Tenant) -> None:
    from tests.helpers import criar_agendamento

    agendamento = criar_agendamento(tenant)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO relatorio_ocorrencias
                   (agendamento_id, tenant_id, planejado_para,
                   estado, motivo, prazo_em, conferida, criado_em)
            VALUES (%s, %s, now(), 'nao_disparada', '', now(), true, now())
            RETURNING id
            """,
            [agendamento.pk, tenant.pk],
        )
        (ocorrencia_id,) = cursor.fetchone()
        cursor.execute(
            "INSERT INTO relatorio_alertas (ocorrencia_id, tenant_id, motivo, nota,"
            " aberto_em) VALUES (%s, %s, 'sem relatório', '', now()) RETURNING id",
            [ocorrencia_id, tenant.pk],
        )
        (alerta_id,) = cursor.fetchone()
        cursor.execute(
            "UPDATE relatorio_alertas SET fechado_em = now() WHERE id = %s", [alerta_id]
        )
    eventos = list(EventoPublicado.objects.filter(tenant_id=tenant.pk).order_by("id"))

    assert [e.tipo for e in eventos] == ["alerta.aberto", "alerta.fechado"]
    assert eventos[0].dados["id"] == alerta_id
    assert eventos[0].dados["agendamento"]["id"] == agendamento.pk
    assert eventos[0].dados["fechado_em"] is None
    assert eventos[1].dados["fechado_em"] is not None


def _progresso(conexao: psycopg.Connection[Any], job_id: int, valor: int) -> None:
    conexao.execute(
        "UPDATE relatorio_jobs SET progresso = %s WHERE id = %s", [valor, job_id]
    )


def _visiveis(conexao: psycopg.Connection[Any], jobs: list[int]) -> list[int]:
    return [
        linha[0]
        for linha in conexao.execute(
            "SELECT job_id FROM relatorio_eventos WHERE job_id = ANY(%s)"
            " AND (dados->>'progresso')::int > 0 ORDER BY id",
            [jobs],
        )
    ]


def mudancas(leitor: Leitor) -> list[tuple[int | None, int]]:
    """What the reader handed out of the progress set here (the submits'
    events, older than the reader, may or may not be read: where a new
    process starts)."""
    return [
        (a.job_id, a.dados["progresso"])
        for a, _ in leitor.recebidos
        if a.dados["progresso"] > 0
    ]


def test_commit_lento_com_id_menor_e_entregue_antes_do_rapido(
    tenant: Tenant, settings: Any
) -> None:
    """Two commits that overlap: the first takes its id, then stays in its
    COMMIT for a second; the second commits meanwhile, with the higher id,
    and is visible first. The reader hands them out in id order."""
    settings.RELATORIOS_EVENTOS_ESPERA_LACUNA_S = 30
    primeiro, segundo = submeter(tenant), submeter(tenant, fim="2026-02-28")
    dsn = processos.ambiente()["DATABASE_URL"]
    with (
        Leitor(tenant.pk) as leitor,
        psycopg.connect(dsn) as lenta,
        psycopg.connect(dsn) as rapida,
    ):
        lenta.execute(DEPOIS_DO_EVENTO)
        lenta.commit()
        _progresso(lenta, primeiro, 1)
        lenta.execute("INSERT INTO espera VALUES (1)")
        em_curso = threading.Thread(target=lenta.commit)
        em_curso.start()
        time.sleep(0.3)  # the slow COMMIT has taken its id and sleeps
        _progresso(rapida, segundo, 2)
        rapida.commit()
        visiveis_antes = _visiveis(rapida, [primeiro, segundo])
        recebidos_antes = mudancas(leitor)
        em_curso.join()
        helpers.esperar(lambda: len(mudancas(leitor)) == 2, descricao="os dois")

    assert visiveis_antes == [segundo]  # the gap the reader had to wait on
    assert recebidos_antes == []
    assert mudancas(leitor) == [(primeiro, 1), (segundo, 2)]
    assert leitor.ids() == sorted(leitor.ids())


def test_id_de_commit_desfeito_nao_trava_alem_da_espera(
    tenant: Tenant, settings: Any
) -> None:
    """A COMMIT that fails after the events' trigger took its id leaves a gap
    forever; the next event waits for it RELATORIOS_EVENTOS_ESPERA_LACUNA_S,
    then goes out."""
    settings.RELATORIOS_EVENTOS_ESPERA_LACUNA_S = 0.5
    dsn = processos.ambiente()["DATABASE_URL"]
    with Leitor(tenant.pk) as leitor, psycopg.connect(dsn) as outra:
        job_id = submeter(tenant)
        helpers.esperar(lambda: leitor.recebidos, descricao="o evento do pedido")
        antes = leitor.ids()[-1]
        outra.execute(DEPOIS_DO_EVENTO)
        outra.commit()
        _progresso(outra, job_id, 1)
        outra.execute("INSERT INTO espera VALUES (0)")
        with pytest.raises(psycopg.errors.RaiseException):
            outra.commit()
        outra.rollback()
        _progresso(outra, job_id, 2)
        outra.commit()
        confirmado = time.monotonic()
        helpers.esperar(
            lambda: len(leitor.recebidos) == 2, descricao="o evento depois da lacuna"
        )
        time.sleep(0.3)

    (_, _), (depois, chegou) = leitor.recebidos
    assert depois.dados["progresso"] == 2
    assert depois.id == antes + 2  # the failed COMMIT took antes + 1
    assert not EventoPublicado.objects.filter(id=antes + 1).exists()
    assert chegou - confirmado >= 0.5
