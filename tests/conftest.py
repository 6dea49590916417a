from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Callable, Iterator
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import override_settings
from django_q.conf import Conf

from relatorios.admin import painel
from relatorios.api import autenticacao
from relatorios.models import Tenant
from tests import helpers, processos


@pytest.fixture(autouse=True, scope="session")
def _tipos_de_teste() -> Iterator[None]:
    # The test-only report types exist in this process as in the children.
    # The key too: children refuse the built-in one, and django-q2 read it at
    # import (Conf), so it is patched there as well.
    chave_do_django_q = Conf.SECRET_KEY
    Conf.SECRET_KEY = processos.CHAVE_DE_TESTE
    with override_settings(
        SECRET_KEY=processos.CHAVE_DE_TESTE,
        RELATORIOS_TIPOS_EXTRAS=processos.TIPOS_DE_TESTE.split(","),
        # Users are created by the hundred; the real hasher is slow on purpose.
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    ):
        yield
    Conf.SECRET_KEY = chave_do_django_q


@pytest.fixture(autouse=True, scope="session")
def _estaticos(_tipos_de_teste: None) -> Iterator[None]:
    # Pages and the admin link hashed static files through the manifest, as in
    # production; it exists after collectstatic. Children (the web server) get the
    # same folder through processos.ambiente.
    with override_settings(STATIC_ROOT=processos.RAIZ / "test-output" / "estaticos"):
        call_command("collectstatic", interactive=False, verbosity=0)
        yield


@pytest.fixture
def ajustes(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Callable[..., None]:
    """Sets knobs here and in every child process started afterwards.

    Environment variables reach the children (processos.ambiente copies the
    environment); the settings of this process are read once at import, so
    the ones that exist are overridden too, with the same value and type.
    """

    def aplicar(**valores: object) -> None:
        for nome, valor in valores.items():
            monkeypatch.setenv(nome, str(valor))
            if hasattr(django_settings, nome):
                tipo = type(getattr(django_settings, nome))
                setattr(settings, nome, tipo(valor))

    return aplicar


@pytest.fixture(autouse=True)
def _cache_de_tokens_vazio() -> Iterator[None]:
    # A token one test authenticated must not outlive the test's rollback.
    autenticacao.esquecer_tudo()
    yield
    autenticacao.esquecer_tudo()


@pytest.fixture(autouse=True)
def _painel_novo() -> Iterator[None]:
    # A dashboard one test built must not be another's (it is reused).
    painel.esquecer()
    yield
    painel.esquecer()


@pytest.fixture
def pasta_saida(request: pytest.FixtureRequest) -> Path:
    """test-output/<test>/: logs of child processes, screenshots. Emptied
    first: tests that count lines of their children's logs must not count a
    previous run's."""
    nome = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)
    pasta = processos.RAIZ / "test-output" / nome
    shutil.rmtree(pasta, ignore_errors=True)
    pasta.mkdir(parents=True, exist_ok=True)
    return pasta


@pytest.fixture
def tenant(db: None) -> Tenant:
    return helpers.criar_tenant("Rede A")


@pytest.fixture
def outro_tenant(db: None) -> Tenant:
    return helpers.criar_tenant("Rede B")


@pytest.fixture
def token(tenant: Tenant) -> str:
    return helpers.criar_usuario(tenant)[1]


@pytest.fixture
def cluster(
    transactional_db: None, pasta_saida: Path
) -> Iterator[Callable[..., processos.Processo]]:
    """Starts real qcluster processes; all are stopped after the test."""
    iniciados: list[processos.Processo] = []

    def iniciar(**extras: str) -> processos.Processo:
        log = pasta_saida / f"qcluster-{len(iniciados) + 1}.log"
        processo = processos.iniciar_cluster(log, **extras)
        iniciados.append(processo)
        return processo

    yield iniciar
    for processo in iniciados:
        processo.parar()


@pytest.fixture
def servidor(transactional_db: None, pasta_saida: Path) -> Iterator[str]:
    """The real web server on the test database; yields its base URL."""
    processo, url = processos.iniciar_web(pasta_saida / "web.log")
    yield url
    processo.parar()


class CaixaSmtp:
    """A real SMTP server (aiosmtpd) on 127.0.0.1: what the clusters' Django
    SMTP backend sends, one entry per SMTP transaction, parsed."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.recebidas: list[tuple[list[str], Any]] = []
        # A test may make the server refuse its next N messages (a transient
        # 451) or take a while per message (a slow relay).
        self.recusar = 0
        self.recusadas = 0
        self.atraso_s = 0.0
        # Or keep a message and answer late (a client that gives up first
        # has sent it without knowing: at least once).
        self.resposta_atrasada_s = 0.0
        caixa = self

        class Tratador:
            async def handle_DATA(
                self, server: Any, session: Any, envelope: Any
            ) -> str:
                if caixa.atraso_s:
                    await asyncio.sleep(caixa.atraso_s)
                if caixa.recusar > 0:
                    caixa.recusar -= 1
                    caixa.recusadas += 1
                    return "451 4.3.0 tente mais tarde"
                mensagem = message_from_bytes(envelope.content, policy=policy.default)
                caixa.recebidas.append((list(envelope.rcpt_tos), mensagem))
                if caixa.resposta_atrasada_s:
                    await asyncio.sleep(caixa.resposta_atrasada_s)
                return "250 OK"

        self.porta = processos.porta_livre()
        self.controlador = Controller(Tratador(), hostname="127.0.0.1", port=self.porta)
        self.controlador.start()

    def ambiente(self) -> dict[str, object]:
        """The settings that point Django's SMTP backend here."""
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": self.porta,
        }

    def para(self, email: str) -> list[Any]:
        return [m for destinos, m in self.recebidas if email in destinos]


@pytest.fixture
def smtp() -> Iterator[CaixaSmtp]:
    caixa = CaixaSmtp()
    yield caixa
    caixa.controlador.stop()
