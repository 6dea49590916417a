"""What the database publishes (migration 0019), read back from its table and
from a real LISTEN connection."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from relatorios.eventos import leitura
from relatorios.jobs import pedidos
from relatorios.models import EventoPublicado, RelatorioJob, Tenant
from tests import processos

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


def test_mudanca_desfeita_nao_e_publicada_nem_anunciada(tenant: Tenant) -> None:
    job_id = submeter(tenant)
    dsn = processos.ambiente()["DATABASE_URL"]
    with psycopg.connect(dsn, autocommit=True) as ouvinte:
        ouvinte.execute("LISTEN relatorios_eventos")
        with transaction.atomic():
            RelatorioJob.objects.filter(pk=job_id).update(progresso=10)
            transaction.set_rollback(True)
        RelatorioJob.objects.filter(pk=job_id).update(progresso=20)
        avisos = [json.loads(n.payload) for n in ouvinte.notifies(timeout=2)]

    assert tipos(job_id) == [("job.pendente", 0), ("job.pendente", 20)]
    assert [(a["job"], a["dados"]["progresso"]) for a in avisos] == [(job_id, 20)]
    assert avisos[0]["id"] == EventoPublicado.objects.latest("id").id


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
    retomada = leitura.retomar(tenant_id=tenant.pk, apos=ids[1])
    EventoPublicado.objects.filter(id__in=ids[:2]).update(
        criado_em=timezone.now() - timedelta(hours=2)
    )
    expurgados = leitura.expurgar()
    depois = leitura.retomar(tenant_id=tenant.pk, apos=ids[1])

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


def test_quem_ve_um_evento_ve_todos_os_anteriores(tenant: Tenant) -> None:
    """Two commits that overlap: the first takes its id, then stays in its
    COMMIT for a second (a later deferred trigger sleeps); the second commits
    meanwhile. Its id is higher, so when it is visible the first's must be."""
    primeiro, segundo = submeter(tenant), submeter(tenant, fim="2026-02-28")
    dsn = processos.ambiente()["DATABASE_URL"]
    with psycopg.connect(dsn) as lenta, psycopg.connect(dsn) as rapida:
        lenta.execute(
            """
            CREATE TEMP TABLE espera (x int);
            CREATE FUNCTION pg_temp.dormir() RETURNS trigger LANGUAGE plpgsql
                AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER dormir AFTER INSERT ON espera
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                EXECUTE FUNCTION pg_temp.dormir();
            """
        )
        lenta.commit()
        lenta.execute(
            "UPDATE relatorio_jobs SET progresso = 1 WHERE id = %s", [primeiro]
        )
        lenta.execute("INSERT INTO espera VALUES (1)")
        em_curso = threading.Thread(target=lenta.commit)
        em_curso.start()
        time.sleep(0.3)  # the slow COMMIT has taken its id and sleeps
        rapida.execute(
            "UPDATE relatorio_jobs SET progresso = 2 WHERE id = %s", [segundo]
        )
        rapida.commit()
        visiveis = [
            linha[0]
            for linha in rapida.execute(
                "SELECT job_id FROM relatorio_eventos WHERE job_id = ANY(%s)"
                " AND (dados->>'progresso')::int > 0 ORDER BY id",
                [[primeiro, segundo]],
            )
        ]
        em_curso.join()

    assert visiveis == [primeiro, segundo]
