"""The event streams, against the real events process (granian ASGI), real
qclusters and the real PostgreSQL, with commits that overlap."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection

from relatorios.jobs import pedidos
from relatorios.models import EventoPublicado, Tenant
from tests import helpers, processos
from tests.eventos.leitor import DEPOIS_DO_EVENTO
from tests.sse import Fluxo, abrir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

# Four monthly chunks of the test type that sleeps: claim, 25/50/75 %, pronto.
PARAMS = {"inicio": "2026-01-01", "fim": "2026-04-30"}


@pytest.fixture
def eventos(transactional_db: None, pasta_saida: Path) -> Iterator[Callable[..., str]]:
    """Starts real events processes; all are stopped after the test."""
    iniciados: list[processos.Processo] = []

    def iniciar(**extras: str) -> str:
        extras.setdefault("RELATORIOS_EVENTOS_BATIMENTO_S", "1")
        log = pasta_saida / f"eventos-{len(iniciados) + 1}.log"
        processo, url = processos.iniciar_eventos(log, **extras)
        iniciados.append(processo)
        return url

    yield iniciar
    for processo in iniciados:
        processo.parar()


def submeter(tenant: Tenant, tipo: str = "teste_lento") -> int:
    return pedidos.submeter(
        tenant_id=tenant.pk, tipo=tipo, params_brutos=PARAMS, usuario_id=None
    ).job.id


def publicados(job_id: int) -> list[tuple[int, str, int]]:
    return [
        (e.id, e.dados["status"], e.dados["progresso"])
        for e in EventoPublicado.objects.filter(job_id=job_id).order_by("id")
    ]


def vistos(fluxo: Fluxo) -> list[tuple[int, str, int]]:
    return [
        (int(e.id or 0), e.dados["status"], e.dados.get("progresso", 100))
        for e in fluxo.eventos
    ]


def status_http(url: str, token: str) -> Any:
    return httpx.get(url, headers={"Authorization": f"Token {token}"}, timeout=30)


def test_fluxo_do_job_ve_cada_mudanca_de_um_job_real_em_ordem(
    tenant: Tenant,
    token: str,
    eventos: Callable[..., str],
    cluster: Callable[..., processos.Processo],
    servidor: str,
) -> None:
    url = eventos()
    job_id = submeter(tenant)
    fluxo = abrir(f"{url}/relatorios/jobs/{job_id}/eventos", token=token)
    fluxo.esperar(lambda f: f.eventos, descricao="o estado inicial")
    cluster()
    fluxo.esperar(lambda f: f.terminou, descricao="o fim do fluxo no `pronto`")

    assert fluxo.status == 200
    assert fluxo.resposta_cabecalhos["content-type"].startswith("text/event-stream")
    assert fluxo.retry == 3000
    # Every change the database published, once, in order, then the end.
    assert vistos(fluxo) == publicados(job_id)
    assert [s for _, s, _ in vistos(fluxo)] == [
        "pendente",
        "executando",
        "executando",
        "executando",
        "executando",
        "pronto",
    ]
    # The claim, then a chunk at a time; the last chunk's 100 % is the `pronto`.
    assert [p for _, _, p in vistos(fluxo)] == [0, 0, 25, 50, 75, 100]
    # The last event is the status endpoint's JSON, byte for byte in content.
    assert (
        fluxo.eventos[-1].dados
        == status_http(f"{servidor}/relatorios/jobs/{job_id}", token).json()
    )


def test_reconexao_com_last_event_id_nao_perde_nada(
    tenant: Tenant,
    token: str,
    eventos: Callable[..., str],
    cluster: Callable[..., processos.Processo],
) -> None:
    url = eventos()
    job_id = submeter(tenant)
    do_tenant = abrir(f"{url}/relatorios/eventos", token=token)
    do_job = abrir(f"{url}/relatorios/jobs/{job_id}/eventos", token=token)
    do_job.esperar(lambda f: f.eventos, descricao="o estado inicial")
    processo = cluster(RELATORIOS_TESTE_PAUSA_S="0.6")
    do_job.esperar(
        lambda f: any(e.dados["progresso"] == 25 for e in f.eventos),
        descricao="25%",
    )
    # Both clients go away mid-job, and come back with what they last saw.
    do_job.fechar()
    do_tenant.fechar()
    ultimo_do_job, ultimo_do_tenant = do_job.ultimo_id, do_tenant.ultimo_id
    assert ultimo_do_job is not None
    assert ultimo_do_tenant is not None
    helpers.esperar(
        lambda: helpers.job(job_id).status == "pronto", descricao="o job pronto"
    )
    processo.parar()
    volta_do_job = abrir(
        f"{url}/relatorios/jobs/{job_id}/eventos", token=token, ultimo=ultimo_do_job
    )
    volta_do_tenant = abrir(
        f"{url}/relatorios/eventos", token=token, ultimo=ultimo_do_tenant
    )
    volta_do_job.esperar(lambda f: f.terminou, descricao="o fim do fluxo")
    volta_do_tenant.esperar(
        lambda f: any(e.tipo == "job.pronto" for e in f.eventos),
        descricao="job.pronto no fluxo do tenant",
    )

    assert vistos(do_job) + vistos(volta_do_job) == publicados(job_id)
    ids_do_tenant = [
        int(e.id or 0) for e in do_tenant.eventos + volta_do_tenant.eventos
    ]
    assert ids_do_tenant == [i for i, _, _ in publicados(job_id)][1:]
    # A job already finished and fully seen: 204, EventSource stops.
    fim = status_http(f"{url}/relatorios/jobs/{job_id}/eventos", token)
    assert fim.status_code == 200  # no Last-Event-ID: the final state, then the end
    assert fim.text.count("data:") == 1
    visto_tudo = httpx.get(
        f"{url}/relatorios/jobs/{job_id}/eventos",
        headers={
            "Authorization": f"Token {token}",
            "Last-Event-ID": str(publicados(job_id)[-1][0]),
        },
        timeout=30,
    )
    assert visto_tudo.status_code == 204


def test_last_event_id_alem_da_retencao_recebe_o_estado_ou_uma_lacuna(
    tenant: Tenant, token: str, eventos: Callable[..., str]
) -> None:
    url = eventos()
    job_id = submeter(tenant)
    antigo = publicados(job_id)[0][0]
    EventoPublicado.objects.filter(id=antigo).delete()  # past the retention
    do_job = abrir(
        f"{url}/relatorios/jobs/{job_id}/eventos", token=token, ultimo=str(antigo)
    )
    do_tenant = abrir(f"{url}/relatorios/eventos", token=token, ultimo=str(antigo))
    do_job.esperar(lambda f: f.eventos, descricao="o estado atual")
    do_tenant.esperar(lambda f: f.eventos, descricao="a lacuna")

    assert [e.dados["status"] for e in do_job.eventos] == ["pendente"]
    assert [e.tipo for e in do_tenant.eventos] == ["lacuna"]
    assert do_tenant.eventos[0].dados["ultimo_id"] == antigo


def test_job_de_outro_tenant_e_404_antes_de_abrir(
    tenant: Tenant, outro_tenant: Tenant, eventos: Callable[..., str]
) -> None:
    url = eventos(RELATORIOS_EVENTOS_MAX_POR_TOKEN="1")
    job_id = submeter(outro_tenant)
    _, token = helpers.criar_usuario(tenant)
    resposta = status_http(f"{url}/relatorios/jobs/{job_id}/eventos", token)
    inexistente = status_http(f"{url}/relatorios/jobs/{job_id + 1000}/eventos", token)

    assert resposta.status_code == 404
    assert resposta.headers["content-type"] == "application/json"
    assert resposta.json() == {"erro": "não encontrado"}
    assert inexistente.json() == resposta.json()
    # The refusal held no slot: the token's one stream still opens.
    assert abrir(f"{url}/relatorios/eventos", token=token).status == 200


@pytest.mark.parametrize(
    ("cabecalhos", "codigo", "campo"),
    [
        ({}, 401, None),
        ({"Authorization": "Token nao-existe"}, 401, None),
        ({"Last-Event-ID": "abc"}, 400, "Last-Event-ID"),
        ({"Last-Event-ID": "-1"}, 400, "Last-Event-ID"),
        # A digit to str.isdigit, not to int(): was a 500.
        ({"Last-Event-ID": "²".encode("latin-1")}, 400, "Last-Event-ID"),
    ],
)
def test_pedido_ruim_e_recusado_em_json_antes_de_abrir(
    token: str,
    eventos: Callable[..., str],
    cabecalhos: dict[str, Any],
    codigo: int,
    campo: str | None,
) -> None:
    url = eventos()
    enviados = {"Authorization": f"Token {token}", **cabecalhos}
    if codigo == 401 and "Authorization" not in cabecalhos:
        enviados.pop("Authorization")
    resposta = httpx.get(f"{url}/relatorios/eventos", headers=enviados, timeout=30)

    assert resposta.status_code == codigo
    assert resposta.json().get("campo") == campo
    assert "erro" in resposta.json()


def test_limites_por_token_e_por_processo(
    tenant: Tenant, eventos: Callable[..., str]
) -> None:
    url = eventos(
        RELATORIOS_EVENTOS_MAX_POR_TOKEN="2", RELATORIOS_EVENTOS_MAX_POR_PROCESSO="3"
    )
    a, b, c = (helpers.criar_usuario(tenant)[1] for _ in range(3))
    primeiros = [abrir(f"{url}/relatorios/eventos", token=a) for _ in range(2)]
    terceiro_de_a = abrir(f"{url}/relatorios/eventos", token=a)
    de_b = abrir(f"{url}/relatorios/eventos", token=b)
    de_c = abrir(f"{url}/relatorios/eventos", token=c)

    assert [f.status for f in primeiros] == [200, 200]
    assert terceiro_de_a.status == 429
    assert terceiro_de_a.resposta_cabecalhos["retry-after"] == "10"
    assert "por token" in terceiro_de_a.corpo_de_erro["erro"]
    assert de_b.status == 200
    assert de_c.status == 429
    assert "limite de 3" in de_c.corpo_de_erro["erro"]
    # A stream that ends frees its slot.
    primeiros[0].fechar()
    helpers.esperar(
        lambda: abrir(f"{url}/relatorios/eventos", token=c).status == 200,
        descricao="a vaga liberada",
    )


def _backend_do_leitor() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name ="
            " 'relatorios-eventos' AND datname = current_database()"
        )
        linha = cursor.fetchone()
    return None if linha is None else int(linha[0])


def test_conexao_de_leitura_derrubada_nao_perde_evento(
    tenant: Tenant, token: str, eventos: Callable[..., str]
) -> None:
    url = eventos()
    job_id = submeter(tenant)
    do_job = abrir(f"{url}/relatorios/jobs/{job_id}/eventos", token=token)
    do_tenant = abrir(f"{url}/relatorios/eventos", token=token)
    do_job.esperar(lambda f: f.eventos, descricao="o estado inicial")
    antes = helpers.esperar(_backend_do_leitor, descricao="a conexão de leitura")
    dsn = processos.ambiente()["DATABASE_URL"]
    with psycopg.connect(dsn, autocommit=True) as outra:
        outra.execute("SELECT pg_terminate_backend(%s)", [antes])
        # Changes committed while the process has no reading connection.
        for progresso in range(1, 21):
            outra.execute(
                "UPDATE relatorio_jobs SET progresso = %s WHERE id = %s",
                [progresso, job_id],
            )
    do_job.esperar(
        lambda f: len(f.eventos) == 21, descricao="os 20 eventos sem conexão"
    )
    do_tenant.esperar(lambda f: len(f.eventos) == 20, descricao="os 20 no tenant")
    depois = helpers.esperar(_backend_do_leitor, descricao="a leitura de volta")

    assert vistos(do_job) == publicados(job_id)
    assert [int(e.id or 0) for e in do_tenant.eventos] == [
        i for i, _, _ in publicados(job_id)
    ][1:]
    assert depois != antes
    time.sleep(1.5)  # a heartbeat later, still nothing twice
    assert len(do_job.eventos) == 21


def progressos(fluxo: Fluxo) -> list[tuple[int, int]]:
    """A tenant stream's job events with a progress set by the test (the
    submits' events may precede its position, or not)."""
    return [
        (e.dados["data"]["id"], e.dados["data"]["progresso"])
        for e in fluxo.eventos
        if e.tipo.startswith("job.") and e.dados["data"]["progresso"] > 0
    ]


def test_retomar_com_um_commit_em_voo_recebe_o_evento_dele_na_ordem(
    tenant: Tenant, token: str, eventos: Callable[..., str]
) -> None:
    """A commit takes its id, then stays in its COMMIT; a later one commits
    with the next id and is visible first. A client resuming meanwhile from
    before both gets both, in order, as does one already open: neither
    skips the slow one's for having the higher id first."""
    url = eventos(RELATORIOS_EVENTOS_ESPERA_LACUNA_S="30")
    primeiro = submeter(tenant)
    segundo = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="teste_lento",
        params_brutos={"inicio": "2026-05-01", "fim": "2026-05-31"},
        usuario_id=None,
    ).job.id
    ao_vivo = abrir(f"{url}/relatorios/eventos", token=token)
    ao_vivo.esperar(lambda f: f.ultimo_id is not None, descricao="a abertura")
    antes = ao_vivo.ultimo_id
    assert antes is not None
    dsn = processos.ambiente()["DATABASE_URL"]
    with psycopg.connect(dsn) as lenta, psycopg.connect(dsn) as rapida:
        lenta.execute(DEPOIS_DO_EVENTO)
        lenta.commit()
        lenta.execute(
            "UPDATE relatorio_jobs SET progresso = 1 WHERE id = %s", [primeiro]
        )
        lenta.execute("INSERT INTO espera VALUES (5)")
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
                "SELECT job_id FROM relatorio_eventos WHERE id > %s"
                " AND (dados->>'progresso')::int > 0 ORDER BY id",
                [int(antes)],
            )
        ]
        retomado = abrir(f"{url}/relatorios/eventos", token=token, ultimo=antes)
        retomado.esperar(lambda f: f.status is not None, descricao="a retomada")
        aberto_em_voo = em_curso.is_alive()
        em_curso.join()
    for fluxo in (ao_vivo, retomado):
        fluxo.esperar(lambda f: len(progressos(f)) == 2, descricao="os dois")

    assert visiveis == [segundo]  # the slow one's lower id was not visible
    assert aberto_em_voo
    for fluxo in (ao_vivo, retomado):
        assert progressos(fluxo) == [(primeiro, 1), (segundo, 2)]
        ids = [int(e.id or 0) for e in fluxo.eventos]
        assert ids == sorted(ids)
        assert len(ids) == len(set(ids))


def test_cada_processo_de_eventos_ve_cada_evento(
    tenant: Tenant, token: str, eventos: Callable[..., str]
) -> None:
    urls = [eventos(), eventos()]
    job_id = submeter(tenant)
    fluxos = [abrir(f"{u}/relatorios/eventos", token=token) for u in urls]
    for progresso in (10, 20, 30):
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE relatorio_jobs SET progresso = %s WHERE id = %s",
                [progresso, job_id],
            )
    for fluxo in fluxos:
        fluxo.esperar(lambda f: len(f.eventos) == 3, descricao="3 eventos")

    esperados = [i for i, _, _ in publicados(job_id)][1:]
    assert [[int(e.id or 0) for e in f.eventos] for f in fluxos] == [esperados] * 2


def _threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def _conexoes_do_banco() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        )
        (n,) = cursor.fetchone()
    return int(n)


def test_fluxos_abertos_nao_seguram_thread_nem_conexao(
    tenant: Tenant, token: str, pasta_saida: Path
) -> None:
    processo, url = processos.iniciar_eventos(
        pasta_saida / "eventos.log", RELATORIOS_EVENTOS_BATIMENTO_S="1"
    )
    try:
        (worker,) = processos.filhos(processo.pid)
        job_id = submeter(tenant)
        primeiro = abrir(f"{url}/relatorios/jobs/{job_id}/eventos", token=token)
        primeiro.esperar(lambda f: f.eventos, descricao="o primeiro fluxo")
        threads, conexoes = _threads(worker), _conexoes_do_banco()
        fluxos = [abrir(f"{url}/relatorios/eventos", token=token) for _ in range(15)]
        fluxos += [
            abrir(f"{url}/relatorios/jobs/{job_id}/eventos", token=token)
            for _ in range(4)
        ]
        for fluxo in fluxos:
            fluxo.esperar(lambda f: f.ultimo_id is not None, descricao="a abertura")
        time.sleep(2)  # a heartbeat went out on every stream

        assert [f.status for f in fluxos] == [200] * 19
        # A database read runs on a thread of the loop's default pool, which
        # grows on demand to its maximum and keeps each thread's connection
        # (eventos/no_banco.py): threads and connections are bounded by that
        # pool, never one per stream (19 here).
        maximo_do_pool = min(32, (os.cpu_count() or 1) + 4)
        assert _threads(worker) <= threads + maximo_do_pool
        assert _conexoes_do_banco() <= conexoes + maximo_do_pool
    finally:
        processo.parar()
