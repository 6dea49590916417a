from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.processos import RAIZ

# Exported only where RELATORIOS_REPLICA_URL is set: tests/banco/test_replica.py
# proves a real scrape with a replica carries each of them.
SO_COM_REPLICA = frozenset(
    {
        "relatorios_replica_disponivel",
        "relatorios_replica_atraso_bytes",
        "relatorios_replica_atraso_segundos",
    }
)

PAINEL = RAIZ / "deploy" / "grafana" / "relatorios.json"
# A name in PromQL that is ours or django-prometheus' (functions, labels and
# keywords never start with these).
_NOME = re.compile(r"\b((?:relatorios|django)_[a-z0-9_]+)\b")


def metricas_exportadas() -> set[str]:
    """Every sample name a real /metrics scrape of this service can carry."""
    resposta = Client().get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert resposta.status_code == 200
    nomes: set[str] = set()
    for nome, tipo in re.findall(
        r"^# TYPE (\S+) (\S+)$", resposta.content.decode(), re.MULTILINE
    ):
        nomes.add(nome)
        if tipo == "histogram":
            nomes |= {f"{nome}_bucket", f"{nome}_count", f"{nome}_sum"}
    return nomes


def nomes_em(expressao: str) -> set[str]:
    return set(_NOME.findall(expressao))


@pytest.mark.django_db
def test_cada_painel_le_metricas_que_o_servico_exporta() -> None:
    painel = json.loads(PAINEL.read_text())
    exportadas = metricas_exportadas()

    expressoes = {
        p["title"]: [alvo["expr"] for alvo in p["targets"]] for p in painel["panels"]
    }
    lidas = {
        titulo: set().union(*(nomes_em(e) for e in exprs))
        for titulo, exprs in expressoes.items()
    }

    assert all(lidas.values())  # every panel reads at least one of ours
    # The replica's gauges are only exported with a replica configured: a real
    # scrape with one carries them (tests/banco/test_replica.py).
    exportadas |= SO_COM_REPLICA
    assert {t: n - exportadas for t, n in lidas.items() if n - exportadas} == {}


def test_painel_tem_o_que_o_operador_abre_primeiro() -> None:
    painel = json.loads(PAINEL.read_text())
    todas = " ".join(alvo["expr"] for p in painel["panels"] for alvo in p["targets"])

    for essencial in (
        'relatorios_submissoes_total{desfecho="reaproveitado"}',
        "histogram_quantile(0.95, sum by (le) (rate(relatorios_job_espera_segundos",
        'relatorios_jobs_finalizados_total{status="falhou"}',
        "relatorios_pendente_mais_antigo_segundos",
        "relatorios_ocorrencias_atrasadas",
        "relatorios_cluster_batimento_idade_segundos",
    ):
        assert essencial in todas
