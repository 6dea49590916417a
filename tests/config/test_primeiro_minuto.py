"""`make run`'s first minute: what a newcomer sees (issue 35, item 7)."""

from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.mail import EmailMessage
from django.test import Client

from config.console import EmailNoConsole
from config.logs import InicioDoAxesEmDebug
from tests import helpers, processos


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


def test_email_impresso_sem_o_base64_do_anexo() -> None:
    saida = io.StringIO()
    mensagem = EmailMessage("Relatório", "Segue o relatório.", to=["a@rede.com"])
    mensagem.attach("vendas.xlsx", b"\x00\x01" * 5000, "application/vnd.ms-excel")

    EmailNoConsole(stream=saida).send_messages([mensagem])

    texto = saida.getvalue()
    assert "Segue o relatório." in texto
    assert "[anexo vendas.xlsx (application/vnd.ms-excel, 10000 bytes) omitido" in texto
    assert "AAEAAQAB" not in texto  # the attachment's base64
    # The message itself keeps its attachment.
    assert mensagem.attachments[0][1] == b"\x00\x01" * 5000


def test_proxy_apaga_sua_pasta_ao_parar(tmp_path: Path) -> None:
    ambiente = {
        **os.environ,
        "TMPDIR": str(tmp_path),
        "PROXY_BIND": f"127.0.0.1:{processos.porta_livre()}",
    }
    proxy = subprocess.Popen(
        [sys.executable, "-m", "config.proxy"], cwd=processos.RAIZ, env=ambiente
    )
    try:
        pid = helpers.esperar(
            lambda: next(tmp_path.glob("relatorios-proxy-*/nginx.pid"), None),
            timeout=30,
        )
        assert pid is not None
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(timeout=30) == 0
    finally:
        proxy.kill()
    assert list(tmp_path.iterdir()) == []
