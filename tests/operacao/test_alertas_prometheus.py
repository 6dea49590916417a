from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.operacao.test_painel import SO_COM_REPLICA, metricas_exportadas, nomes_em
from tests.processos import RAIZ

PASTA = RAIZ / "deploy" / "prometheus"


def promtool(*argumentos: str) -> subprocess.CompletedProcess[str]:
    executavel = shutil.which("promtool")
    # Not a skip: `make test` installs Debian's prometheus package
    # (.ci/dependencias-do-sistema), and untested rules are no rules.
    assert executavel, "promtool missing: apt-get install prometheus (make test does)"
    return subprocess.run(
        [executavel, *argumentos],
        cwd=PASTA,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "argumentos",
    [
        ("check", "rules", "alerts.yml"),
        ("test", "rules", "tests.yml"),
        ("check", "config", "--syntax-only", "prometheus.yml"),
    ],
)
def test_promtool_aceita_regras_testes_e_configuracao(
    argumentos: tuple[str, ...],
) -> None:
    resultado = promtool(*argumentos)

    assert resultado.returncode == 0, resultado.stdout + resultado.stderr
    assert "SUCCESS" in resultado.stdout + resultado.stderr


def test_cada_regra_tem_casos_que_disparam_calam_e_somem() -> None:
    regras = yaml.safe_load((PASTA / "alerts.yml").read_text())["groups"][0]["rules"]
    testes = yaml.safe_load((PASTA / "tests.yml").read_text())["tests"]
    disparam: set[str] = set()
    calam: set[str] = set()
    for teste in testes:
        for avaliacao in teste["alert_rule_test"]:
            alvo = disparam if avaliacao["exp_alerts"] else calam
            alvo.add(avaliacao["alertname"])
    nomes = {regra["alert"] for regra in regras}

    assert disparam == nomes
    assert calam == nomes
    for regra in regras:
        assert set(regra["annotations"]) == {"summary", "description", "runbook"}
    sumidas = [t for t in testes if "stale" in str(t["input_series"])]
    assert {"RelatoriosMetricasAusentes"} <= {
        a["alertname"] for t in sumidas for a in t["alert_rule_test"] if a["exp_alerts"]
    }


@pytest.mark.django_db
def test_regras_so_leem_metricas_que_o_servico_exporta() -> None:
    regras = yaml.safe_load((PASTA / "alerts.yml").read_text())["groups"][0]["rules"]

    lidas = {n for regra in regras for n in nomes_em(regra["expr"])}

    assert lidas
    assert lidas - metricas_exportadas() - SO_COM_REPLICA == set()
