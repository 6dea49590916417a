"""GET /relatorios/jobs/<id>/resultado.csv, and the API's `url` to it."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from typing import Any

import pytest
from django.http import StreamingHttpResponse
from django.test import Client
from django.utils import timezone

from relatorios.jobs import pedidos
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant
from tests import helpers

pytestmark = pytest.mark.django_db

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes"}
LINHAS = [
    {
        "periodo": "2026-01",
        "loja": "L001",
        "loja_nome": "Loja São João",
        "vendas": 1200,
        "quantidade": 3400,
        "receita": "123456.78",
    },
    {
        "periodo": "2026-01",
        "loja": "L002",
        "loja_nome": '=HYPERLINK("http://x")',
        "vendas": 5,
        "quantidade": -7,
        "receita": "-10.50",
    },
]


def job_pronto(tenant: Tenant, tipo: str = "vendas", resultado: Any = None) -> int:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk, tipo=tipo, params_brutos=PEDIDO, usuario_id=None
    ).job.id
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado=resultado
        if resultado is not None
        else {"agrupar": "mes", "linhas": LINHAS, "totais": {"vendas": 1205}},
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(hours=1),
    )
    return job_id


def ler(resposta: Any) -> tuple[bytes, list[list[str]]]:
    corpo = b"".join(resposta.streaming_content)
    texto = corpo.decode("utf-8-sig")
    return corpo, list(csv.reader(io.StringIO(texto), delimiter=";"))


def test_csv_com_bom_ponto_e_virgula_e_virgula_decimal(
    tenant: Tenant, token: str
) -> None:
    job_id = job_pronto(tenant)
    resposta = helpers.cliente_com_token(token).get(
        f"/relatorios/jobs/{job_id}/resultado.csv"
    )
    corpo, linhas = ler(resposta)
    assert resposta.status_code == 200
    assert isinstance(resposta, StreamingHttpResponse)
    assert resposta["Content-Type"] == "text/csv; charset=utf-8"
    assert resposta["Content-Disposition"] == (
        f'attachment; filename="vendas_2026-01-01_2026-01-31_job{job_id}.csv"'
    )
    assert corpo.startswith(b"\xef\xbb\xbfPer\xc3\xadodo;")
    assert b"\r\n" in corpo
    assert linhas == [
        ["Período", "Loja", "Nome da loja", "Vendas", "Quantidade", "Receita (R$)"],
        ["2026-01", "L001", "Loja São João", "1200", "3400", "123456,78"],
        # A text cell that a spreadsheet would run as a formula is quoted.
        ["2026-01", "L002", '\'=HYPERLINK("http://x")', "5", "-7", "-10,50"],
    ]


def test_csv_aceita_a_sessao_do_navegador(tenant: Tenant) -> None:
    job_id = job_pronto(tenant)
    cliente = Client()
    cliente.force_login(helpers.criar_usuario(tenant)[0])
    resposta = cliente.get(f"/relatorios/jobs/{job_id}/resultado.csv")
    assert resposta.status_code == 200
    assert ler(resposta)[1][1][1] == "L001"


def test_csv_de_cada_tipo_tem_suas_colunas(tenant: Tenant, token: str) -> None:
    job_id = job_pronto(
        tenant,
        tipo="comissoes",
        resultado={
            "linhas": [
                {
                    "periodo": "2026-01-02",
                    "vendedor_id": 3,
                    "vendedor": "Vendedor 3",
                    "taxa": "0.0350",
                    "receita": "100.00",
                    "comissao": "3.50",
                }
            ],
            "totais": {},
        },
    )
    resposta = helpers.cliente_com_token(token).get(
        f"/relatorios/jobs/{job_id}/resultado.csv"
    )
    assert ler(resposta)[1] == [
        [
            "Período",
            "Código do vendedor",
            "Vendedor",
            "Taxa",
            "Receita (R$)",
            "Comissão (R$)",
        ],
        ["2026-01-02", "3", "Vendedor 3", "0,0350", "100,00", "3,50"],
    ]


def test_csv_de_resultado_vazio_tem_so_o_cabecalho(tenant: Tenant, token: str) -> None:
    job_id = job_pronto(tenant, resultado={"agrupar": "mes", "linhas": []})
    resposta = helpers.cliente_com_token(token).get(
        f"/relatorios/jobs/{job_id}/resultado.csv"
    )
    assert len(ler(resposta)[1]) == 1


def test_csv_de_tipo_que_saiu_do_registro_usa_as_chaves(
    tenant: Tenant, token: str
) -> None:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="teste_lento",
        params_brutos=PEDIDO,
        usuario_id=None,
    ).job.id
    # A deployment dropped the type since: its columns are gone with it.
    RelatorioJob.objects.filter(pk=job_id).update(
        tipo="tipo_removido",
        status=EstadoDoJob.PRONTO,
        resultado={"linhas": [{"a": 1, "b": "x"}]},
    )
    resposta = helpers.cliente_com_token(token).get(
        f"/relatorios/jobs/{job_id}/resultado.csv"
    )
    assert ler(resposta)[1] == [["a", "b"], ["1", "x"]]


def test_csv_de_outro_tenant_e_404(
    tenant: Tenant, outro_tenant: Tenant, token: str
) -> None:
    alheio = job_pronto(outro_tenant)
    cliente = helpers.cliente_com_token(token)
    resposta = cliente.get(f"/relatorios/jobs/{alheio}/resultado.csv")
    assert resposta.status_code == 404
    assert resposta.json() == {"erro": "não encontrado"}
    assert cliente.get("/relatorios/jobs/0/resultado.csv").status_code == 404


def test_csv_de_job_nao_pronto_e_409(tenant: Tenant, token: str) -> None:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk, tipo="vendas", params_brutos=PEDIDO, usuario_id=None
    ).job.id
    resposta = helpers.cliente_com_token(token).get(
        f"/relatorios/jobs/{job_id}/resultado.csv", headers={"Accept": "text/csv"}
    )
    assert resposta.status_code == 409
    assert resposta.json() == {"erro": "o relatório não está pronto (status: pendente)"}


def test_csv_sem_credenciais_e_401_e_sem_tenant_e_403(
    client: Client, tenant: Tenant
) -> None:
    job_id = job_pronto(tenant)
    resposta = client.get(f"/relatorios/jobs/{job_id}/resultado.csv")
    assert resposta.status_code == 401
    assert resposta["WWW-Authenticate"] == "Token"
    _, token = helpers.criar_usuario(None, is_staff=True)
    resposta = helpers.cliente_com_token(token).get(
        f"/relatorios/jobs/{job_id}/resultado.csv"
    )
    assert resposta.status_code == 403


def test_status_pronto_aponta_para_o_csv(tenant: Tenant, token: str) -> None:
    job_id = job_pronto(tenant)
    corpo = helpers.cliente_com_token(token).get(f"/relatorios/jobs/{job_id}").json()
    assert corpo["url"] == f"/relatorios/jobs/{job_id}/resultado.csv"


def test_status_aceita_a_sessao_e_o_token_continua_primeiro(
    client: Client, tenant: Tenant
) -> None:
    job_id = job_pronto(tenant)
    assert client.get(f"/relatorios/jobs/{job_id}")["WWW-Authenticate"] == "Token"
    client.force_login(helpers.criar_usuario(tenant)[0])
    resposta = client.get(f"/relatorios/jobs/{job_id}")
    assert resposta.status_code == 200
    assert resposta.json()["status"] == "pronto"


def test_submeter_pela_api_continua_so_com_token(
    client: Client, tenant: Tenant
) -> None:
    client.force_login(helpers.criar_usuario(tenant)[0])
    resposta = client.post(
        "/relatorios/vendas", PEDIDO, content_type="application/json"
    )
    assert resposta.status_code == 401
