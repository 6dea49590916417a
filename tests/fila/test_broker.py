"""django-q2's own broker contract, run against ours as production runs them.

`django_q.tests.test_brokers.test_orm` ships with the installed package: the
queue's size, the redelivery of a message not acknowledged within `retry`,
`lock_size` (messages held), `purge_queue` and `delete_queue`, acknowledge
and fail. Here it runs against `BrokerOrdenado` (Q_CLUSTER's broker_class)
and `BrokerComAtraso` (a retry's delayed message), with a cluster id set as
`qcluster` sets it: every message taken is renamed after its holder.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.tests import test_brokers as do_django_q

from relatorios.fila import broker, clusters

pytestmark = pytest.mark.django_db

BROKERS = [
    "relatorios.fila.broker.BrokerOrdenado",
    "relatorios.fila.broker.BrokerComAtraso",
]


@pytest.fixture
def cluster_id() -> Iterator[int]:
    """A registered cluster whose id names the messages this process takes."""
    cluster_id = clusters.registrar(host="h", pid=1, versao="x")
    broker.definir_cluster(cluster_id=cluster_id)
    yield cluster_id
    broker.definir_cluster(cluster_id=0)  # a process that is no cluster of ours


@pytest.mark.parametrize("classe", BROKERS)
def test_nossos_brokers_cumprem_o_contrato_do_django_q(
    classe: str, cluster_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Conf, "BROKER_CLASS", classe)
    do_django_q.test_orm(monkeypatch)


@pytest.mark.parametrize("classe", BROKERS)
def test_mensagem_tomada_leva_o_nome_do_cluster_e_segue_na_fila(
    classe: str, cluster_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Conf, "BROKER_CLASS", classe)
    fila = get_broker(list_key="fila_de_teste")
    fila.enqueue("a")
    fila.enqueue("b")

    [(tomada, _)] = fila.dequeue()

    # The contract above ran on renamed messages: the holder is in the key.
    assert OrmQ.objects.get(pk=tomada).key == broker.chave_do_cluster(
        fila="fila_de_teste", cluster_id=cluster_id
    )
    assert (fila.queue_size(), fila.lock_size()) == (1, 1)
    fila.purge_queue()
    assert not OrmQ.objects.exists()
