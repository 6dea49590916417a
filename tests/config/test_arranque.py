"""A deployment cannot half-start: the real web server (config/servidor.py) and
qcluster processes refuse what would make them serve 500s or sign with a public
key, and the README's production settings pass `manage.py check --deploy`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config.arranque import CHAVE_DE_DESENVOLVIMENTO
from tests import processos

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

# The README's "Deploy checklist", as environment variables.
PRODUCAO = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "k7Qz!p2@Vx9#Lm4$Rt6%Yw8^Bn3&Hc5*Jd1(Fg0)Sa-Ue=Io+Pl_Kj~Mh",
    "DJANGO_ALLOWED_HOSTS": "relatorios.exemplo.com.br",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://relatorios.exemplo.com.br",
    "DJANGO_SECURE_PROXY_SSL_HEADER": "true",
    "DJANGO_SECURE_SSL_REDIRECT": "true",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "DJANGO_SECURE_HSTS_PRELOAD": "true",
    "DJANGO_SECURE_COOKIES": "true",
    "RELATORIOS_PROXIES_CONFIAVEIS": "127.0.0.1/32",
    "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    "EMAIL_HOST": "smtp.exemplo.com.br",
    "RELATORIOS_URL_BASE": "https://relatorios.exemplo.com.br",
}


def esperar_saida(processo: processos.Processo, limite_s: float = 60) -> int:
    codigo = processo.popen.wait(limite_s)
    processo.matar()
    return codigo


def test_web_recusa_a_chave_de_desenvolvimento(pasta_saida: Path) -> None:
    processo = processos.Processo(
        [sys.executable, "-m", "config.servidor"],
        processos.ambiente(
            DJANGO_SECRET_KEY=CHAVE_DE_DESENVOLVIMENTO,
            WEB_BIND=f"127.0.0.1:{processos.porta_livre()}",
        ),
        pasta_saida / "web.log",
    )
    assert esperar_saida(processo) != 0
    log = processo.texto_do_log()
    assert "refusing to start" in log
    assert "DJANGO_SECRET_KEY" in log
    assert "Spawning worker" not in log


def test_web_sem_collectstatic_recusa_subir_dizendo_o_que_falta(
    pasta_saida: Path, tmp_path: Path
) -> None:
    processo = processos.Processo(
        [sys.executable, "-m", "config.servidor"],
        processos.ambiente(
            DJANGO_STATIC_ROOT=str(tmp_path / "nada-coletado"),
            WEB_BIND=f"127.0.0.1:{processos.porta_livre()}",
        ),
        pasta_saida / "web.log",
    )
    assert esperar_saida(processo) != 0
    log = processo.texto_do_log()
    assert "static files not collected" in log
    assert "collectstatic" in log
    assert "Spawning worker" not in log


def test_web_com_chave_e_estaticos_sobe(pasta_saida: Path) -> None:
    processo, url = processos.iniciar_web(pasta_saida / "web.log")
    try:
        assert processo.vivo()
        assert url.startswith("http://127.0.0.1:")
    finally:
        processo.parar()


def test_cluster_recusa_a_chave_de_desenvolvimento(pasta_saida: Path) -> None:
    processo = processos.Processo(
        [sys.executable, "manage.py", "qcluster"],
        processos.ambiente(DJANGO_SECRET_KEY=CHAVE_DE_DESENVOLVIMENTO),
        pasta_saida / "qcluster.log",
    )
    assert esperar_saida(processo) != 0
    log = processo.texto_do_log()
    assert "relatorios.E002" in log
    assert "DJANGO_SECRET_KEY" in log
    assert "supervisor pronto" not in log


def test_check_deploy_limpo_com_as_variaveis_de_producao() -> None:
    resultado = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=processos.RAIZ,
        env=processos.ambiente(**PRODUCAO),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resultado.returncode == 0, resultado.stdout + resultado.stderr
    assert "no issues" in resultado.stdout


def test_check_deploy_acusa_o_que_falta_sem_elas() -> None:
    resultado = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=processos.RAIZ,
        env=processos.ambiente(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    saida = resultado.stdout + resultado.stderr
    assert resultado.returncode != 0
    assert "security.W004" in saida  # HSTS
    # Session cookie not secure: W010 (the app), as MIDDLEWARE names the
    # session middleware through relatorios/api/cadeia.py.
    assert "security.W010" in saida
    assert "relatorios.W010" in saida  # CSRF cookie not secure (security.W016)
    assert "relatorios.W001" in saida  # emails written to the log stream
    assert "relatorios.W002" in saida  # links in emails without a host


@pytest.mark.parametrize(
    ("nome", "valor"),
    [
        ("RELATORIOS_EVENTOS_REVISAO_S", "0"),
        ("RELATORIOS_EVENTOS_REVISAO_S", "6"),
        ("RELATORIOS_EVENTOS_VIDA_MAX_S", "0"),
        ("RELATORIOS_EVENTOS_ESPERA_BANCO_S", "-1"),
    ],
)
def test_processo_de_eventos_recusa_um_ajuste_invalido_nomeando_o(
    pasta_saida: Path, nome: str, valor: str
) -> None:
    processo = processos.Processo(
        [sys.executable, "-m", "config.eventos"],
        processos.ambiente(
            EVENTOS_BIND=f"127.0.0.1:{processos.porta_livre()}", **{nome: valor}
        ),
        pasta_saida / "eventos.log",
    )
    assert esperar_saida(processo) != 0
    log = processo.texto_do_log()
    assert "refusing to start" in log
    assert nome in log
