"""What the soak found, each pinned by a test that does not need the soak."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from relatorios.agendamentos import alertas
from relatorios.jobs import pedidos
from relatorios.models import Entrega, RelatorioJob, Status
from relatorios.notificacoes import saida
from tests import helpers
from tests.agendamentos.test_entrega import CONTABILIDADE, disparada, pronto

pytestmark = pytest.mark.django_db(transaction=True)


def test_ocorrencia_entregue_tem_suas_entregas_mesmo_se_o_job_reinicia_no_meio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checker marks a pronto occurrence delivered and writes its
    deliveries in one transaction, but in two statements: a request that
    restarts the (expired) job commits between them, the second statement
    no longer sees the job pronto, writes nothing, and the occurrence stays
    marked delivered with no delivery at all (the soak's
    `agendados_nao_entregues`: "entregue=True, 0 de 2 entregas")."""
    tenant = helpers.criar_tenant()
    ocorrencia = disparada(tenant)
    pronto(ocorrencia.job_id)
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(
        expira_em=timezone.now() - timedelta(seconds=1)
    )
    reinicios: list[str] = []

    def reiniciar() -> None:
        # A manager asks for the same report: its expired result starts over.
        try:
            reinicios.append(
                pedidos.submeter(
                    tenant_id=tenant.pk,
                    tipo="vendas",
                    params_brutos=ocorrencia.params,
                    usuario_id=None,
                ).job.status
            )
        finally:
            connection.close()

    escrever = saida.enfileirar_entrega_agendada

    def entre_os_dois_comandos(*, ocorrencia_id: int) -> int:
        fio = threading.Thread(target=reiniciar)
        fio.start()
        fio.join(2)  # committed by now, unless our transaction holds it back
        return escrever(ocorrencia_id=ocorrencia_id)

    monkeypatch.setattr(saida, "enfileirar_entrega_agendada", entre_os_dois_comandos)

    alertas.verificar()
    ocorrencia.refresh_from_db()

    entregas = Entrega.objects.filter(ocorrencia=ocorrencia).count()
    assert (ocorrencia.entregue_em is not None, entregas) == (
        True,
        len(CONTABILIDADE),
    )
    helpers.esperar(lambda: reinicios, descricao="o pedido reiniciar o job")
    assert reinicios == [Status.PENDENTE]
