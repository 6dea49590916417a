from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from django_q.models import OrmQ

from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from tests import helpers

pytestmark = pytest.mark.django_db

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes"}


def post(cliente: Client, caminho: str, corpo: Any, **kwargs: Any) -> Any:
    return cliente.post(
        caminho,
        data=corpo if isinstance(corpo, (str, bytes)) else json.dumps(corpo),
        content_type=kwargs.pop("content_type", "application/json"),
        **kwargs,
    )


@pytest.fixture
def cliente(token: str) -> Client:
    return helpers.cliente_com_token(token)


def test_submit_aceita_com_202_local_e_retry_after(cliente: Client) -> None:
    resposta = post(cliente, "/relatorios/vendas", PEDIDO)
    corpo = resposta.json()
    assert resposta.status_code == 202
    assert set(corpo) == {"id", "status", "progresso", "criado_em"}
    assert corpo["status"] == "pendente"
    assert corpo["progresso"] == 0
    assert resposta["Location"] == f"/relatorios/jobs/{corpo['id']}"
    assert resposta["Retry-After"] == "2"


def test_submit_repetido_devolve_o_mesmo_job(cliente: Client) -> None:
    ids = {post(cliente, "/relatorios/vendas", PEDIDO).json()["id"] for _ in range(3)}
    assert len(ids) == 1
    assert OrmQ.objects.count() == 1


def test_barra_final_funciona_sem_redirecionar(cliente: Client) -> None:
    a = post(cliente, "/relatorios/vendas/", PEDIDO)
    b = cliente.get(f"/relatorios/jobs/{a.json()['id']}/")
    assert a.status_code == 202
    assert b.status_code == 200


def test_submit_de_job_pronto_devolve_200_com_resultado(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = post(cliente, "/relatorios/vendas", PEDIDO).json()["id"]
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado={"totais": {"receita": "10.50"}},
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(hours=1),
    )
    resposta = post(cliente, "/relatorios/vendas", PEDIDO)
    corpo = resposta.json()
    assert resposta.status_code == 200
    assert resposta["Location"] == f"/relatorios/jobs/{job_id}"
    assert "Retry-After" not in resposta
    assert corpo["status"] == "pronto"
    assert corpo["resultado"] == {"totais": {"receita": "10.50"}}
    assert set(corpo) == {
        "id",
        "status",
        "resultado",
        "concluido_em",
        "expira_em",
        "url",
    }
    assert corpo["url"] == f"/relatorios/jobs/{job_id}/resultado.csv"


@pytest.mark.parametrize("status", ["pendente", "executando"])
def test_status_em_andamento(cliente: Client, status: str) -> None:
    job_id = post(cliente, "/relatorios/vendas", PEDIDO).json()["id"]
    RelatorioJob.objects.filter(pk=job_id).update(
        status=status, progresso=40, tentativas=1
    )
    resposta = cliente.get(f"/relatorios/jobs/{job_id}")
    assert resposta.status_code == 200
    assert resposta.json() == {
        "id": job_id,
        "status": status,
        "progresso": 40,
        "tentativas": 1,
        "proxima_tentativa_em": None,
    }
    assert resposta["Retry-After"] == "2"


def test_status_falhou_mostra_o_erro_sem_traceback(cliente: Client) -> None:
    job_id = post(cliente, "/relatorios/vendas", PEDIDO).json()["id"]
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.FALHOU,
        erro="ZeroDivisionError: division by zero",
        erro_detalhe='Traceback (most recent call last):\n  File "x.py"',
    )
    resposta = cliente.get(f"/relatorios/jobs/{job_id}")
    assert resposta.json() == {
        "id": job_id,
        "status": "falhou",
        "erro": "ZeroDivisionError: division by zero",
    }
    assert "Retry-After" not in resposta


def test_job_de_outro_tenant_e_404(cliente: Client, outro_tenant: Tenant) -> None:
    _, token_b = helpers.criar_usuario(outro_tenant)
    job_b = post(helpers.cliente_com_token(token_b), "/relatorios/vendas", PEDIDO)
    resposta = cliente.get(f"/relatorios/jobs/{job_b.json()['id']}")
    inexistente = cliente.get("/relatorios/jobs/987654")
    assert resposta.status_code == 404
    assert resposta.json() == inexistente.json() == {"erro": "não encontrado"}


@pytest.mark.parametrize(
    "caminho",
    [
        "/relatorios/jobs/0",
        "/relatorios/jobs/9223372036854775808",
        "/relatorios/jobs/99999999999999999999",
        "/relatorios/jobs/-1",
        "/relatorios/jobs/abc",
    ],
)
def test_ids_absurdos_sao_404(cliente: Client, caminho: str) -> None:
    assert cliente.get(caminho).status_code == 404


def test_tipo_desconhecido_e_404(cliente: Client) -> None:
    resposta = post(cliente, "/relatorios/vendass", PEDIDO)
    assert resposta.status_code == 404
    assert resposta.json() == {"erro": "não encontrado"}


def test_sem_token_e_401(client: Client) -> None:
    resposta = post(client, "/relatorios/vendas", PEDIDO)
    assert resposta.status_code == 401
    assert "erro" in resposta.json()
    assert resposta["WWW-Authenticate"] == "Token"


def test_token_invalido_e_401(tenant: Tenant) -> None:
    resposta = post(helpers.cliente_com_token("0" * 40), "/relatorios/vendas", PEDIDO)
    assert resposta.status_code == 401
    assert "erro" in resposta.json()


def test_usuario_sem_tenant_e_403(db: None) -> None:
    _, token = helpers.criar_usuario(None, is_staff=True)
    cliente = helpers.cliente_com_token(token)
    assert post(cliente, "/relatorios/vendas", PEDIDO).status_code == 403
    assert cliente.get("/relatorios/jobs/1").status_code == 403


@pytest.mark.parametrize(
    ("corpo", "campo"),
    [
        ({"fim": "2026-01-31"}, "inicio"),
        ({**PEDIDO, "inicio": "31/01/2026"}, "inicio"),
        ({**PEDIDO, "fim": "2025-12-31"}, "fim"),
        ({**PEDIDO, "agrupar": "ano"}, "agrupar"),
        ({**PEDIDO, "lojas": "L1"}, "lojas"),
        ({**PEDIDO, "lojas": ["NAO-EXISTE"]}, "lojas"),
        ({**PEDIDO, "lojas": ["L\u0000"]}, "lojas"),
        ({**PEDIDO, "extra": 1}, "extra"),
        ([PEDIDO], "corpo"),
        ("{not json", "corpo"),
        ('"texto"', "corpo"),
        ("", "inicio"),
    ],
)
def test_entrada_ruim_e_400_nomeando_o_campo(
    cliente: Client, corpo: Any, campo: str
) -> None:
    resposta = post(cliente, "/relatorios/vendas", corpo)
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == campo
    assert resposta.json()["erro"]
    assert RelatorioJob.objects.count() == 0


def test_corpo_que_nao_e_json_e_400(cliente: Client) -> None:
    resposta = post(
        cliente, "/relatorios/vendas", "inicio=2026-01-01", content_type="text/plain"
    )
    assert resposta.status_code == 400
    assert resposta.json()["campo"] == "corpo"


def test_metodo_errado_e_405_com_erro(cliente: Client) -> None:
    resposta = cliente.get("/relatorios/vendas")
    assert resposta.status_code == 405
    assert "erro" in resposta.json()
