"""`make run`'s first minute: what a newcomer sees (issue 35, item 7)."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from config.logs import InicioDoAxesEmDebug


def _registro(msg: str) -> logging.LogRecord:
    return logging.LogRecord("axes.apps", logging.INFO, __file__, 1, msg, None, None)


@pytest.mark.parametrize(("nivel", "mostra"), [("INFO", False), ("DEBUG", True)])
def test_inicio_do_axes_so_aparece_em_debug(
    nivel: str, mostra: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging.getLogger(), "level", getattr(logging, nivel))
    registro = _registro("AXES: BEGIN version 8.3.1, blocking by combination")

    assert InicioDoAxesEmDebug().filter(registro) is mostra
    assert registro.levelname == "DEBUG"


def test_outras_linhas_do_axes_seguem_como_vieram() -> None:
    registro = _registro("AXES: Locked out")
    assert InicioDoAxesEmDebug().filter(registro) is True
    assert registro.levelname == "INFO"


@pytest.mark.django_db
@pytest.mark.parametrize("caminho", ["/entrar/", "/admin/login/"])
def test_paginas_e_admin_tem_favicon(caminho: str) -> None:
    html = Client().get(caminho).content.decode()
    assert '<link rel="icon" href="/static/relatorios/favicon.' in html
