"""Support opens the operations dashboard in a real Chromium, from the real
web server, and its charts are drawn with the series of the database, under
the admin's strict Content-Security-Policy."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import global_settings
from django.test import override_settings
from playwright.sync_api import expect

from relatorios.models import Usuario, permissoes
from tests import helpers
from tests.admin.test_painel import montar_cenario
from tests.paginas.test_csp import Visita, visitar  # noqa: F401 (a fixture)
from tests.paginas.test_navegador import (
    ESPERA_MS,
    SENHA,
    navegador,  # noqa: F401 (a fixture)
)
from tests.processos import RAIZ

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

CAPTURA = "painel-de-operacao.png"


def suporte_com_senha(usuario: str) -> Usuario:
    # The web server verifies with the project's hashers, not the tests' MD5.
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        suporte = helpers.criar_usuario(
            None, username=usuario, password=SENHA, is_staff=True
        )[0]
    suporte.groups.add(permissoes.criar_grupo_suporte())
    return suporte


def test_suporte_ve_os_graficos_do_painel_desenhados(
    servidor: str,
    visitar: Callable[[], Visita],  # noqa: F811
    pasta_saida: Path,
) -> None:
    montar_cenario(suporte_com_senha("sofia"))
    visita = visitar()
    visita.pagina.set_viewport_size({"width": 1280, "height": 900})
    pagina = visita.ver("/admin/login/?next=/admin/painel/")
    pagina.fill("#id_username", "sofia")
    pagina.fill("#id_password", SENHA)
    pagina.click("input[type=submit]")
    expect(pagina).to_have_url(f"{servidor}/admin/painel/")
    pagina = visita.ver("/admin/painel/")
    expect(pagina.locator("figure.grafico-do-painel.desenhado")).to_have_count(
        6, timeout=ESPERA_MS
    )
    desenhados = pagina.evaluate(
        """() => Object.fromEntries(
          [...document.querySelectorAll('canvas[data-grafico-do-painel]')].map(t => {
            const c = Chart.getChart(t);
            return [t.dataset.graficoDoPainel, {
              tipo: c.config.type,
              deitado: c.options.indexAxis === 'y',
              rotulos: c.data.labels.length,
              series: c.data.datasets.map(d => [d.label, d.data]),
              largura: c.width, altura: c.height,
            }];
          }))"""
    )
    pagina.screenshot(path=str(pasta_saida / CAPTURA), full_page=True)

    assert visita.queixas == []
    assert {nome: g["tipo"] for nome, g in desenhados.items()} == {
        "concluidos_24h": "bar",
        "concluidos_7d": "bar",
        "falhas": "bar",
        "ocorrencias": "bar",
        "tenants_jobs": "bar",
        "tenants_tempo": "bar",
    }
    assert desenhados["concluidos_24h"]["rotulos"] == 24
    assert desenhados["concluidos_7d"]["rotulos"] == 168
    # The known data (tests/admin/test_painel.py: montar_cenario), point by point.
    pronto_24h, falhou_24h = desenhados["concluidos_24h"]["series"]
    assert (pronto_24h[0], falhou_24h[0]) == ("pronto", "falhou")
    assert (sum(pronto_24h[1]), sum(falhou_24h[1])) == (2, 2)
    assert (pronto_24h[1][-3], falhou_24h[1][-3]) == (2, 1)
    assert [sum(s[1]) for s in desenhados["concluidos_7d"]["series"]] == [3, 3]
    assert desenhados["falhas"]["deitado"] is True
    assert desenhados["falhas"]["series"] == [
        ["últimas 24 h", [2, 0]],
        ["últimos 7 dias", [2, 1]],
    ]
    assert [(s[0], s[1][-2:]) for s in desenhados["ocorrencias"]["series"]] == [
        ("no prazo", [0, 1]),
        ("atrasadas", [0, 1]),
        ("perdidas", [2, 0]),
        ("a conferir", [0, 1]),
    ]
    assert desenhados["tenants_jobs"]["series"] == [["jobs criados", [4, 3]]]
    assert desenhados["tenants_tempo"]["series"][0][1][1] == 12
    assert all(g["largura"] > 300 and g["altura"] > 150 for g in desenhados.values())
    expect(pagina.locator("[data-indicador='pendentes']")).to_have_text("2")
    expect(pagina.locator("[data-cluster]")).to_have_count(1)

    if os.environ.get("RELATORIOS_ATUALIZAR_CAPTURA"):
        # `RELATORIOS_ATUALIZAR_CAPTURA=1 make test` refreshes docs/'s image.
        shutil.copy(pasta_saida / CAPTURA, RAIZ / "docs" / CAPTURA)
