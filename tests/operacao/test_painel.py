from __future__ import annotations

import json
import math
import os
import re
import shutil
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from relatorios.jobs import pedidos
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from tests import helpers, processos
from tests.paginas.test_navegador import com_vendas
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


# --- Every panel's queries, evaluated by a real Prometheus ----------------------

# Grafana asks Prometheus' range API for each target, as here; a panel shows
# what comes back. No Grafana here (none in Debian, PyPI or npm); the JSON's
# shape is checked against Grafana's schema by `make grafana-esquema`.
SEM_DADOS_AQUI = frozenset(
    {
        # Only with a read replica configured (tests/banco/test_replica.py).
        "Réplica de leitura: atraso e onde os relatórios leram",
        # No schedule is active here: no data, never "now - 0" (56 years).
        "Último sucesso mais antigo entre os agendamentos",
    }
)
# Nothing in this test is a day old: an age or a duration beyond it is a
# panel showing the wrong thing (e.g. "now - 0" when a gauge reads 0 for none).
UM_DIA_S = 86_400.0


class Prometheus:
    """Debian's `prometheus` server scraping the web and the cluster every second."""

    def __init__(self, pasta: Path, alvos: dict[str, str]) -> None:
        self.porta = processos.porta_livre()
        configuracao = pasta / "prometheus.yml"
        trabalhos = "".join(
            f"  - job_name: {nome}\n    static_configs:\n      - targets: ['{alvo}']\n"
            for nome, alvo in alvos.items()
        )
        configuracao.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n{trabalhos}"
        )
        # A fresh database: an earlier run's series (other ports) would be
        # counted with this run's.
        shutil.rmtree(pasta / "tsdb", ignore_errors=True)
        executavel = shutil.which("prometheus")
        assert executavel, "prometheus missing: apt-get install prometheus"
        self.processo = processos.Processo(
            [
                executavel,
                f"--config.file={configuracao}",
                f"--storage.tsdb.path={pasta / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.porta}",
            ],
            dict(os.environ),
            pasta / "prometheus.log",
        )
        helpers.esperar(self._pronto, descricao="prometheus pronto")

    def _pronto(self) -> bool:
        try:
            with urllib.request.urlopen(self._url("/-/ready"), timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def _url(self, caminho: str) -> str:
        return f"http://127.0.0.1:{self.porta}{caminho}"

    def raspagens(self) -> int:
        """Scrapes done of the target scraped least."""
        valores = self.intervalo("count_over_time(up[5m])", 1)
        return int(min(valores, default=0))

    def intervalo(self, expressao: str, janela_s: int = 60) -> list[float]:
        """Every value of every series over the last `janela_s` seconds, as
        Grafana's query for a panel gets them (NaN, a gap, left out)."""
        fim = time.time()
        consulta = urllib.parse.urlencode(
            {"query": expressao, "start": fim - janela_s, "end": fim, "step": 2}
        )
        with urllib.request.urlopen(
            self._url(f"/api/v1/query_range?{consulta}"), timeout=10
        ) as resposta:
            corpo = json.load(resposta)
        assert corpo["status"] == "success", (expressao, corpo)
        valores = [float(v) for s in corpo["data"]["result"] for _, v in s["values"]]
        return [v for v in valores if not math.isnan(v)]

    def parar(self) -> None:
        self.processo.parar()


def pedir(url: str, token: str, fim: str) -> None:
    """A submit through the web (its counters are the web's)."""
    pedido = urllib.request.Request(
        f"{url}/relatorios/vendas",
        data=json.dumps({"inicio": "2026-01-01", "fim": fim}).encode(),
        method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(pedido, timeout=60) as resposta:
        assert resposta.status in (200, 202)


def unidade_de(painel: dict[str, Any], alvo: dict[str, Any]) -> str:
    """The unit Grafana draws a target's series with: the panel's, or the
    override that names the target's legend."""
    configuracao = painel.get("fieldConfig", {})
    for override in configuracao.get("overrides", []):
        if override["matcher"]["options"] == alvo.get("legendFormat"):
            for propriedade in override["properties"]:
                if propriedade["id"] == "unit":
                    return str(propriedade["value"])
    return str(configuracao.get("defaults", {}).get("unit", ""))


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_cada_painel_mostra_dados_com_sentido_numa_prometheus_de_verdade(
    tenant: Tenant,
    token: str,
    servidor: str,
    cluster: Callable[..., processos.Processo],
    pasta_saida: Path,
) -> None:
    painel = json.loads(PAINEL.read_text())
    com_vendas(tenant)
    porta_do_cluster = processos.porta_livre()
    cluster(RELATORIOS_METRICAS_PORTA=str(porta_do_cluster))
    prometheus = Prometheus(
        pasta_saida,
        {
            "relatorios-web": servidor.removeprefix("http://"),
            "relatorios-cluster": f"127.0.0.1:{porta_do_cluster}",
        },
    )
    try:
        # Two rounds, each some scrapes apart: Prometheus' rate() and
        # increase() count from a series' first sample, so a counter's
        # first increments (its series appears with them) are never seen.
        # Each round: a report run and reused twice, one that fails.
        for rodada, fim in enumerate(("2026-01-31", "2026-02-28")):
            for _ in range(3):
                pedir(servidor, token, fim)
            quebrado = pedidos.submeter(
                tenant_id=tenant.pk,
                tipo="teste_quebrado",
                params_brutos={"inicio": "2026-01-01", "fim": fim},
                usuario_id=None,
            ).job.id
            helpers.esperar(
                lambda rodada=rodada, quebrado=quebrado: (
                    RelatorioJob.objects.filter(status=EstadoDoJob.PRONTO).count()
                    == rodada + 1
                    and helpers.job(quebrado).status == EstadoDoJob.FALHOU
                ),
                descricao="um job pronto e outro falho",
            )
            # Every rate() then has samples before and after the round.
            feitas = prometheus.raspagens()
            helpers.esperar(
                lambda feitas=feitas: prometheus.raspagens() >= feitas + 3,
                descricao="três raspagens de cada alvo",
            )
        vistos = {
            p["title"]: [
                (unidade_de(p, alvo), prometheus.intervalo(alvo["expr"]))
                for alvo in p["targets"]
            ]
            for p in painel["panels"]
        }
    finally:
        prometheus.parar()

    sem_dados = {t for t, alvos in vistos.items() if not any(v for _, v in alvos)}
    fora = {
        (titulo, unidade, max(valores))
        for titulo, alvos in vistos.items()
        for unidade, valores in alvos
        if valores
        and (
            (unidade == "s" and not 0 <= max(valores) < UM_DIA_S)
            or (unidade == "percentunit" and not 0 <= max(valores) <= 1)
            or any(math.isinf(v) for v in valores)
        )
    }

    assert sem_dados == SEM_DADOS_AQUI
    assert fora == set()
