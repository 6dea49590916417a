from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from relatorios.fila import clusters
from relatorios.operacao import saude


# No django_db mark: any database access in the request would raise.
def test_healthz_nao_toca_o_banco(client: Client) -> None:
    resposta = client.get("/healthz")

    assert resposta.status_code == 200
    assert resposta.json() == {"status": "ok", "problemas": []}


@pytest.mark.django_db
def test_readyz_falha_com_migracoes_pendentes(
    client: Client, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.RELATORIOS_VERIFICADOR_MAX_S = 0
    clusters.registrar(host="h", pid=1, versao="x")
    monkeypatch.setattr(saude, "_migracoes_em_dia", False)
    monkeypatch.setattr(
        saude.MigrationExecutor,
        "migration_plan",
        lambda self, alvos: [("relatorios", "0099_futura")],
    )

    resposta = client.get("/readyz")

    assert resposta.status_code == 503
    assert resposta.json()["problemas"] == ["1 migrações não aplicadas"]


@pytest.mark.django_db
def test_readyz_passa_com_migracoes_aplicadas_e_lembra(
    client: Client, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.RELATORIOS_VERIFICADOR_MAX_S = 0
    clusters.registrar(host="h", pid=1, versao="x")
    monkeypatch.setattr(saude, "_migracoes_em_dia", False)

    assert client.get("/readyz").status_code == 200
    assert saude._migracoes_em_dia is True
