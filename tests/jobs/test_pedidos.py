from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import OrmQ
from django_q.tasks import async_task

from relatorios import tipos
from relatorios.fila.mensagens import TAREFA_RELATORIO
from relatorios.jobs import pedidos, vagas
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from relatorios.tipos import TipoDesconhecido, normalizacao
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers, processos

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31"}


def submeter(tenant: Tenant, params: Any = PEDIDO, tipo: str = "vendas") -> Any:
    return pedidos.submeter(
        tenant_id=tenant.pk, tipo=tipo, params_brutos=params, usuario_id=None
    )


def forcar(job_id: int, **campos: Any) -> None:
    # Test set-up only: puts a job in a state the workers would reach.
    RelatorioJob.objects.filter(pk=job_id).update(**campos)


def mensagens() -> list[int]:
    return sorted(m.task["args"][0] for m in OrmQ.objects.all())


@pytest.mark.django_db
def test_reenvio_do_mesmo_pedido_reusa_o_job(tenant: Tenant) -> None:
    primeiro = submeter(tenant)
    segundo = submeter(
        tenant, {"fim": "2026-01-31T03:00:00Z", "inicio": "2026-01-01", "lojas": []}
    )
    assert primeiro.criado
    assert not segundo.criado
    assert segundo.job.id == primeiro.job.id
    assert RelatorioJob.objects.count() == 1
    assert mensagens() == [primeiro.job.id]


@pytest.mark.django_db
def test_tenants_diferentes_nunca_dividem_um_job(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    a = submeter(tenant)
    b = submeter(outro_tenant)
    assert a.job.id != b.job.id
    assert RelatorioJob.objects.get(pk=b.job.id).tenant_id == outro_tenant.pk


@pytest.mark.django_db
def test_job_novo_grava_params_normalizados_e_chave(tenant: Tenant) -> None:
    helpers.criar_lojas(tenant, "L1", "L2")
    submissao = submeter(tenant, {**PEDIDO, "lojas": ["L2", "L1", "L2"]})
    job = helpers.job(submissao.job.id)
    esperado = {**PEDIDO, "agrupar": "dia", "lojas": ["L1", "L2"]}
    assert job.params == esperado
    assert job.chave == normalizacao.chave(tenant.pk, "vendas", esperado)
    assert (job.status, job.tentativas, job.progresso) == (EstadoDoJob.PENDENTE, 0, 0)
    assert submissao.job.status == EstadoDoJob.PENDENTE


@pytest.mark.django_db
def test_job_que_falhou_recomeca(tenant: Tenant) -> None:
    original = submeter(tenant).job.id
    forcar(original, status=EstadoDoJob.FALHOU, erro="x", tentativas=3)
    OrmQ.objects.all().delete()
    de_novo = submeter(tenant)
    job = helpers.job(original)
    assert de_novo.criado
    assert de_novo.job.id == original
    assert (job.status, job.tentativas, job.erro) == (EstadoDoJob.PENDENTE, 0, None)
    assert mensagens() == [original]


@pytest.mark.django_db
def test_resultado_valido_e_devolvido_sem_recalcular(tenant: Tenant) -> None:
    original = submeter(tenant).job.id
    forcar(
        original,
        status=EstadoDoJob.PRONTO,
        resultado={"totais": 1},
        expira_em=timezone.now() + timedelta(hours=1),
    )
    OrmQ.objects.all().delete()
    de_novo = submeter(tenant)
    assert not de_novo.criado
    assert de_novo.job.status == EstadoDoJob.PRONTO
    assert de_novo.job.resultado == {"totais": 1}
    assert mensagens() == []


@pytest.mark.django_db
def test_resultado_expirado_recomeca(tenant: Tenant) -> None:
    original = submeter(tenant).job.id
    forcar(
        original,
        status=EstadoDoJob.PRONTO,
        resultado={"totais": 1},
        expira_em=timezone.now() - timedelta(seconds=1),
    )
    OrmQ.objects.all().delete()
    de_novo = submeter(tenant)
    job = helpers.job(original)
    assert de_novo.criado
    assert (job.status, job.resultado, job.expira_em) == (
        EstadoDoJob.PENDENTE,
        None,
        None,
    )
    assert mensagens() == [original]


@pytest.mark.django_db
@pytest.mark.parametrize("status", [EstadoDoJob.PENDENTE, EstadoDoJob.EXECUTANDO])
def test_job_em_andamento_nao_recomeca(tenant: Tenant, status: str) -> None:
    original = submeter(tenant).job.id
    forcar(original, status=status, tentativas=1)
    de_novo = submeter(tenant)
    assert not de_novo.criado
    assert de_novo.job.status == status
    assert helpers.job(original).tentativas == 1
    assert mensagens() == [original]


@pytest.mark.django_db
def test_loja_de_outro_tenant_e_rejeitada_sem_criar_nada(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    helpers.criar_lojas(tenant, "L1")
    helpers.criar_lojas(outro_tenant, "L9")
    with pytest.raises(ErroDeParametro) as erro:
        submeter(tenant, {**PEDIDO, "lojas": ["L1", "L9", "L8"]})
    assert erro.value.campo == "lojas"
    assert "L8" in erro.value.mensagem
    assert "L9" in erro.value.mensagem
    assert RelatorioJob.objects.count() == 0
    assert OrmQ.objects.count() == 0


@pytest.mark.django_db
def test_tipo_desconhecido(tenant: Tenant) -> None:
    with pytest.raises(TipoDesconhecido):
        submeter(tenant, tipo="vendass")


@pytest.mark.django_db
def test_submit_desfeito_nao_deixa_tarefa(tenant: Tenant) -> None:
    class Desfazer(Exception):
        pass

    def submeter_e_desistir() -> None:
        with transaction.atomic():
            submeter(tenant)
            assert OrmQ.objects.count() == 1
            raise Desfazer

    with pytest.raises(Desfazer):
        submeter_e_desistir()
    assert RelatorioJob.objects.count() == 0
    assert OrmQ.objects.count() == 0


@pytest.mark.django_db
def test_acerto_de_dedup_e_uma_so_leitura(tenant: Tenant) -> None:
    helpers.criar_lojas(tenant, "L1")
    submeter(tenant, {**PEDIDO, "lojas": ["L1"]})
    with CaptureQueriesContext(connection) as consultas:
        submeter(tenant, {**PEDIDO, "lojas": ["L1"]})
    assert len(consultas) == 1
    assert consultas[0]["sql"].lstrip().upper().startswith("SELECT")
    assert "FOR UPDATE" not in consultas[0]["sql"].upper()


@pytest.mark.django_db
def test_acerto_de_dedup_nao_reserva_id(tenant: Tenant) -> None:
    primeiro = submeter(tenant)
    submeter(tenant)
    submeter(tenant)
    # A hit never calls nextval: the next new job takes the very next id.
    segundo = submeter(tenant, {"inicio": "2026-02-01", "fim": "2026-02-28"})
    assert segundo.job.id == primeiro.job.id + 1


@pytest.mark.django_db
def test_pedido_novo_e_uma_leitura_e_uma_chamada_da_funcao(tenant: Tenant) -> None:
    with CaptureQueriesContext(connection) as consultas:
        submissao = submeter(tenant)
    sqls = [
        " ".join(c["sql"].split())
        for c in consultas
        # SAVEPOINTs: the test itself runs inside a transaction.
        if not c["sql"].startswith(("SAVEPOINT", "RELEASE"))
    ]
    assert len(sqls) == 2
    assert sqls[0].startswith("SELECT")
    assert "FROM (SELECT) AS um LEFT JOIN relatorio_jobs" in sqls[0]
    assert "FROM relatorios_submeter(" in sqls[1]
    assert submissao.criado
    assert mensagens() == [submissao.job.id]


@pytest.mark.django_db
def test_mensagem_do_submit_e_a_do_async_task(tenant: Tenant) -> None:
    submissao = submeter(tenant)
    escrita = OrmQ.objects.get()
    async_task(
        TAREFA_RELATORIO,
        submissao.job.id,
        task_name=f"relatorio-{submissao.job.id}",
        q_options={"timeout": vagas.timeout_da_tarefa(tipos.obter("vendas"))},
    )
    referencia = OrmQ.objects.exclude(pk=escrita.pk).get()
    nossa, deles = escrita.task, referencia.task
    assert list(nossa) == list(deles)  # same keys, same order
    for campo in ("id", "started"):
        nossa.pop(campo), deles.pop(campo)
    assert nossa == deles
    assert escrita.key == referencia.key


@pytest.mark.django_db
def test_limite_de_pendentes_nao_grava_nada(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_MAX_PENDENTES_POR_TENANT = 1
    primeiro = submeter(tenant)
    with pytest.raises(pedidos.LimiteDePendentes):
        submeter(tenant, {"inicio": "2026-02-01", "fim": "2026-02-28"})
    assert list(RelatorioJob.objects.values_list("id", flat=True)) == [primeiro.job.id]
    assert mensagens() == [primeiro.job.id]
    # A repeat of a pending job is a hit, never a 429.
    assert submeter(tenant).job.id == primeiro.job.id


@pytest.mark.django_db(transaction=True)
def test_corrida_com_insert_concorrente_usa_o_job_que_ganhou(tenant: Tenant) -> None:
    """The snapshot trap: our read misses a row another transaction commits
    before our upsert, whose RETURNING then comes back empty."""
    params = helpers_normalizados()
    chave = normalizacao.chave(tenant.pk, "vendas", params)
    dsn = processos.ambiente()["DATABASE_URL"]
    resultado: dict[str, Any] = {}

    with psycopg.connect(dsn) as outra:
        # The rival inserts the same key and holds its transaction open.
        (rival_id,) = outra.execute(
            "INSERT INTO relatorio_jobs (chave, tenant_id, tipo, params, status)"
            " VALUES (%s, %s, 'vendas', %s::jsonb, 'pendente') RETURNING id",
            [chave, tenant.pk, psycopg.types.json.Jsonb(params)],
        ).fetchone()

        def em_paralelo() -> None:
            try:
                resultado["submissao"] = submeter(tenant)
            finally:
                connection.close()

        fio = threading.Thread(target=em_paralelo)
        fio.start()
        # Our submit read nothing, went to the upsert and now waits on the
        # rival's uncommitted row; wait until PostgreSQL says so.
        helpers.esperar(
            lambda: outra.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted"
            ).fetchone()[0],
            descricao="o submit esperando a linha do rival",
        )
        outra.commit()
        fio.join(30)

    assert resultado["submissao"].job.id == rival_id
    assert not resultado["submissao"].criado
    assert RelatorioJob.objects.count() == 1
    assert OrmQ.objects.count() == 0  # the rival (not a real submit) enqueued nothing


def helpers_normalizados() -> dict[str, Any]:
    return {**PEDIDO, "agrupar": "dia", "lojas": []}


# --- notificar_email: one step for the API and the pages --------------------------


def inscritos(job_id: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT email FROM relatorio_inscricoes WHERE job_id = %s", [job_id]
        )
        return [linha[0] for linha in cursor.fetchall()]


def notificando(
    tenant: Tenant, notificar: Any = True, email: str | None = "gerente@example.com"
) -> Any:
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos=PEDIDO,
        usuario_id=None,
        notificar=notificar,
        email_do_usuario=email,
    )


def test_submeter_com_notificar_inscreve_o_email_do_usuario_uma_vez(
    tenant: Tenant,
) -> None:
    primeiro = notificando(tenant)
    repetido = notificando(tenant)

    assert repetido.job.id == primeiro.job.id
    assert inscritos(primeiro.job.id) == ["gerente@example.com"]


def test_submeter_de_um_job_pronto_nao_inscreve(tenant: Tenant) -> None:
    job = submeter(tenant).job
    forcar(
        job.id,
        status=EstadoDoJob.PRONTO,
        resultado={"totais": 1},
        expira_em=timezone.now() + timedelta(hours=1),
    )

    de_novo = notificando(tenant)

    assert de_novo.job.id == job.id
    assert inscritos(job.id) == []


@pytest.mark.parametrize(
    ("notificar", "email"),
    [("sim", "gerente@example.com"), (True, None), (True, "root@localhost")],
)
def test_submeter_com_notificar_invalido_nao_grava_nada(
    tenant: Tenant, notificar: Any, email: str | None
) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        notificando(tenant, notificar, email)

    assert erro.value.campo == "notificar_email"
    assert not RelatorioJob.objects.filter(tenant=tenant).exists()
