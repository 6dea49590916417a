"""What a tenant may store in a schedule or webhook, how often a schedule may
fire, and how many of each a tenant may have (issue 17, findings 2 and 3)."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.db import connection, transaction

from relatorios import migrations
from relatorios.agendamentos import agenda
from relatorios.models import (
    Agendamento,
    LimiteDoTenant,
    Tenant,
    Webhook,
    reservar_vaga,
)
from relatorios.notificacoes import webhooks
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers

criar = helpers.criar_agendamento

# The finding's cron: 120,000 terms, 240 KB, under the body limit.
CRON_ENORME = "0 3 * * " + ",".join(["1"] * 120_000)


def registrar(tenant: Tenant) -> Webhook:
    return webhooks.registrar_webhook(
        tenant_id=tenant.pk,
        url="http://127.0.0.1:9/ganchos",
        eventos=["job.pronto"],
        usuario_id=None,
    )


# --- Texts ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("campos", "campo", "mensagem"),
    [
        ({"cron": CRON_ENORME}, "cron", "o máximo é 200 caracteres"),
        ({"cron": "0 3 * * " + ",".join(["1"] * 100)}, "cron", "200 caracteres"),
        ({"nome": "x" * 201}, "nome", "até 200 caracteres"),
        ({"nome": "Vendas\nBcc: todos@rede.com"}, "nome", "quebras de linha"),
        ({"nome": "Vendas\tdiárias"}, "nome", "tabulações"),
        ({"destinatarios": ["a" * 246 + "@rede.com"]}, "destinatarios", "254"),
    ],
)
def test_texto_longo_ou_com_controle_e_recusado_nomeando_o_campo(
    tenant: Tenant, campos: dict[str, Any], campo: str, mensagem: str
) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        criar(tenant, **campos)
    assert erro.value.campo == campo
    assert mensagem in erro.value.mensagem
    assert not Agendamento.objects.exists()


@pytest.mark.django_db
def test_cron_de_200_caracteres_ainda_e_aceito(tenant: Tenant) -> None:
    cron = "0 3 * * " + ",".join(["1"] * 96)
    assert len(cron) == 199
    assert criar(tenant, cron=cron).cron == cron


@pytest.mark.django_db
def test_quantos_destinatarios_cabem_e_um_ajuste(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_MAX_DESTINATARIOS = 2
    emails = ["a@rede.com", "b@rede.com", "c@rede.com"]
    with pytest.raises(ErroDeParametro) as erro:
        criar(tenant, destinatarios=emails)
    assert (erro.value.campo, erro.value.mensagem) == (
        "destinatarios",
        "lista de até 2 e-mails",
    )
    assert criar(tenant, destinatarios=emails[:2]).destinatarios == emails[:2]


@pytest.mark.django_db
def test_mais_eventos_do_que_existem_e_recusado() -> None:
    with pytest.raises(ErroDeParametro) as erro:
        webhooks.validar_eventos(["job.pronto"] * 5)
    assert erro.value.campo == "eventos"
    assert webhooks.validar_eventos(["job.pronto"] * 4) == ["job.pronto"]


# --- The minimum interval between firings ---------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "cron",
    [
        "* * * * *",
        "*/5 * * * *",
        # Its next two firings may be a day apart; the ones after, a minute.
        "*/1 3 * * *",
        "0,10 3 * * *",
        # 23:55 and, the next day, 00:05.
        "5,55 0,23 * * *",
    ],
)
def test_cron_que_dispara_a_menos_de_15_minutos_e_recusado(
    tenant: Tenant, cron: str
) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        criar(tenant, cron=cron)
    assert erro.value.campo == "cron"
    assert "o intervalo mínimo é 15 minutos" in erro.value.mensagem
    assert not Agendamento.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "cron",
    ["*/15 * * * *", "0,30 3 * * *", "0 3 * * *", "55 23 * * 1,2", "0 0 29 2 *"],
)
def test_cron_espacado_o_bastante_e_aceito(tenant: Tenant, cron: str) -> None:
    assert criar(tenant, cron=cron).cron == cron


@pytest.mark.django_db
def test_intervalo_minimo_e_um_ajuste(tenant: Tenant, settings: Any) -> None:
    settings.RELATORIOS_INTERVALO_MINIMO_MIN = 60
    with pytest.raises(ErroDeParametro) as erro:
        criar(tenant, cron="*/30 * * * *")
    assert "o intervalo mínimo é 60 minutos" in erro.value.mensagem
    settings.RELATORIOS_INTERVALO_MINIMO_MIN = 0
    assert criar(tenant, cron="* * * * *").cron == "* * * * *"


# --- Bounded work on reads ------------------------------------------------------------


@pytest.mark.django_db
def test_proximos_disparos_calcula_no_maximo_dez(tenant: Tenant) -> None:
    agendamento = criar(tenant, cron="0 3 * * *")
    assert len(agenda.proximos_disparos(agendamento, 1000)) == 10


def _migracao(sufixo: str) -> Any:
    # By name, not number: the lead renumbers migrations at merge.
    pasta = Path(migrations.__file__).parent
    (arquivo,) = pasta.glob(f"*_{sufixo}.py")
    return importlib.import_module(f"relatorios.migrations.{arquivo.stem}")


@pytest.mark.django_db
def test_migracao_exclui_agendamento_de_cron_longo_gravado_antes_do_limite(
    tenant: Tenant,
) -> None:
    sonda = criar(tenant, nome="sonda")
    pausada = criar(tenant, nome="sonda pausada", cron="0 5 * * *")
    normal = criar(tenant, nome="normal", cron="0 4 * * *")
    agenda.pausar(agendamento_id=pausada.pk)
    Agendamento.objects.filter(pk__in=[sonda.pk, pausada.pk]).update(cron=CRON_ENORME)

    _migracao("excluir_crons_longos").excluir_crons_longos(apps, None)

    excluidos = Agendamento.objects.filter(excluido_em__isnull=False)
    assert sorted(excluidos.values_list("nome", flat=True)) == [
        "sonda",
        "sonda pausada",
    ]
    assert not excluidos.filter(ativo=True).exists()
    assert not excluidos.filter(proximo_disparo__isnull=False).exists()
    normal.refresh_from_db()
    assert (normal.ativo, normal.excluido_em) == (True, None)


# --- Per-tenant caps ------------------------------------------------------------------


@pytest.mark.django_db
def test_limite_de_agendamentos_conta_os_pausados_e_nao_os_excluidos(
    tenant: Tenant, outro_tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT = 3
    primeiro = criar(tenant, nome="1")
    agenda.pausar(agendamento_id=criar(tenant, nome="2", cron="0 4 * * *").pk)
    criar(tenant, nome="3", cron="0 5 * * *")

    with pytest.raises(LimiteDoTenant) as erro:
        criar(tenant, nome="4", cron="0 6 * * *")

    assert str(erro.value) == (
        "o limite de 3 agendamentos por empresa foi atingido: exclua um antes de "
        "criar outro"
    )
    assert Agendamento.objects.filter(tenant=tenant).count() == 3
    assert criar(outro_tenant, nome="de outra empresa").tenant_id == outro_tenant.pk
    assert agenda.excluir(agendamento_id=primeiro.pk)
    assert criar(tenant, nome="4", cron="0 6 * * *").nome == "4"


@pytest.mark.django_db
def test_limite_de_webhooks_por_tenant(
    tenant: Tenant, outro_tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = True
    settings.RELATORIOS_MAX_WEBHOOKS_POR_TENANT = 2
    primeiro = registrar(tenant)
    registrar(tenant)

    with pytest.raises(LimiteDoTenant) as erro:
        registrar(tenant)

    assert "o limite de 2 webhooks por empresa" in str(erro.value)
    assert Webhook.objects.filter(tenant=tenant).count() == 2
    assert registrar(outro_tenant).tenant_id == outro_tenant.pk
    assert webhooks.remover_webhook(tenant_id=tenant.pk, webhook_id=primeiro.pk)
    assert registrar(tenant).tenant_id == tenant.pk


CRIADORES: dict[str, tuple[Callable[[Tenant], Any], type[Any]]] = {
    "agendamentos": (lambda tenant: criar(tenant), Agendamento),
    "webhooks": (registrar, Webhook),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("recurso", sorted(CRIADORES))
def test_seis_criacoes_simultaneas_na_ultima_vaga_criam_uma_so(
    settings: Any, recurso: str
) -> None:
    settings.RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT = 3
    settings.RELATORIOS_MAX_WEBHOOKS_POR_TENANT = 3
    settings.RELATORIOS_WEBHOOK_PERMITIR_LOCAL = True
    criar_um, modelo = CRIADORES[recurso]
    tenant = helpers.criar_tenant()
    criar_um(tenant)
    criar_um(tenant)
    barreira = threading.Barrier(6)
    resultados: list[str] = []

    def tentar() -> None:
        try:
            barreira.wait()
            criar_um(tenant)
            resultados.append("criado")
        except LimiteDoTenant:
            resultados.append("limite")
        finally:
            connection.close()

    threads = [threading.Thread(target=tentar) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(resultados) == ["criado"] + ["limite"] * 5
    assert modelo.objects.filter(tenant=tenant).count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_vaga_sendo_reservada_nao_trava_quem_so_referencia_o_tenant() -> None:
    tenant = helpers.criar_tenant()
    reservada, liberar = threading.Event(), threading.Event()

    def reservar() -> None:
        try:
            with transaction.atomic():
                reservar_vaga(
                    tenant_id=tenant.pk,
                    existentes=Webhook.objects.filter(tenant=tenant),
                    limite=1,
                    mensagem="cheio",
                )
                reservada.set()
                liberar.wait(timeout=30)
        finally:
            connection.close()

    thread = threading.Thread(target=reservar)
    thread.start()
    assert reservada.wait(timeout=30)
    try:
        with transaction.atomic():
            # An insert whose foreign key names the tenant (here a store of
            # its ERP): waiting on the tenant's row would be LockNotAvailable.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            (loja,) = helpers.criar_lojas(tenant, "L900")
    finally:
        liberar.set()
        thread.join(timeout=30)
    assert loja.tenant_id == tenant.pk
