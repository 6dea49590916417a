from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import DatabaseError, connection, connections, transaction
from django.test import RequestFactory

from relatorios.api.erros import tratar_excecao
from relatorios.banco import comum
from relatorios.models import Tenant
from relatorios.operacao.conexao import ErrosDoBanco
from tests import helpers
from tests.agendamentos.test_travas import conexao

pytestmark = pytest.mark.django_db(transaction=True)


def tocar(tenant: Tenant) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE tenants SET nome = nome WHERE id = %s", [tenant.pk])


def deadlock_real(trabalho: Callable[[Callable[[], None]], Any]) -> dict[str, Any]:
    """Runs `trabalho` in a thread against a real second connection that makes
    its first attempt a deadlock victim; returns what happened.

    `trabalho` gets the step to run inside its transaction: lock tenant B,
    then tenant A. The other connection holds A, then asks for B while the
    thread waits on A; its own deadlock_timeout is long, so the thread's
    backend is the one that detects the cycle and is aborted.
    """
    a, b = helpers.criar_tenant(), helpers.criar_tenant()
    saida: dict[str, Any] = {"tentativas": 0}
    com_b = threading.Event()

    def passo() -> None:
        saida["tentativas"] += 1
        tocar(b)
        com_b.set()
        tocar(a)

    def rodar() -> None:
        try:
            saida["valor"] = trabalho(passo)
        except Exception as exc:
            saida["erro"] = exc
        finally:
            connections.close_all()

    with conexao() as outra:
        outra.execute("SET deadlock_timeout = '20s'")
        outra.execute("UPDATE tenants SET nome = nome WHERE id = %s", [a.pk])
        linha = threading.Thread(target=rodar)
        linha.start()
        assert com_b.wait(30)
        outra.execute("UPDATE tenants SET nome = nome WHERE id = %s", [b.pk])
        outra.commit()
    linha.join(30)
    return saida


def test_repetivel_refaz_a_vitima_de_um_deadlock_real() -> None:
    @comum.repetivel
    def trabalho(passo: Callable[[], None]) -> str:
        passo()
        return "feito"

    saida = deadlock_real(trabalho)

    assert "erro" not in saida
    assert saida["valor"] == "feito"
    assert saida["tentativas"] == 2


def test_sem_repetir_o_deadlock_vira_409_na_api_e_nas_paginas() -> None:
    def trabalho(passo: Callable[[], None]) -> None:
        with transaction.atomic():
            passo()

    erro = deadlock_real(trabalho)["erro"]
    pedido = RequestFactory().post("/painel/agendamentos/1/pausar")
    pedido.user = helpers.criar_usuario(helpers.criar_tenant())[0]

    api = tratar_excecao(erro, {})
    pagina = ErrosDoBanco(lambda r: None).process_exception(pedido, erro)

    assert isinstance(erro, DatabaseError)
    assert comum.conflito_repetivel(erro)
    assert api is not None
    assert (api.status_code, api["Retry-After"]) == (409, "1")
    assert "tente de novo" in api.data["erro"]
    assert pagina is not None
    assert (pagina.status_code, pagina["Retry-After"]) == (409, "1")
    assert "Tente de novo" in pagina.content.decode()


def dividir_por_zero() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 / 0")


def test_outros_erros_do_banco_nao_sao_conflitos() -> None:
    with pytest.raises(DatabaseError) as erro:
        dividir_por_zero()

    assert not comum.conflito_repetivel(erro.value)
