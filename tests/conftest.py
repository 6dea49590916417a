from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from relatorios.api import autenticacao
from relatorios.models import Tenant
from tests import helpers, processos


@pytest.fixture(autouse=True, scope="session")
def _tipos_de_teste() -> Iterator[None]:
    # The test-only report types exist in this process as in the children.
    with override_settings(
        RELATORIOS_TIPOS_EXTRAS=processos.TIPOS_DE_TESTE.split(","),
        # Users are created by the hundred; the real hasher is slow on purpose.
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    ):
        yield


@pytest.fixture(autouse=True)
def _cache_de_tokens_vazio() -> Iterator[None]:
    # A token one test authenticated must not outlive the test's rollback.
    autenticacao.esquecer_tudo()
    yield
    autenticacao.esquecer_tudo()


@pytest.fixture
def pasta_saida(request: pytest.FixtureRequest) -> Path:
    """test-output/<test>/: logs of child processes, screenshots."""
    nome = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)
    pasta = processos.RAIZ / "test-output" / nome
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
    """A real gunicorn on the test database; yields its base URL."""
    processo, url = processos.iniciar_gunicorn(pasta_saida / "gunicorn.log")
    yield url
    processo.parar()
