"""Seed 004's monthly close end to end, with real processes: a client program
asks for last month's close through the API and downloads it as Excel; the
manager finds it on the painel (the same job) with its chart in Chromium;
the 1st-of-the-month schedule lands on that job too and accounting receives
the workbook by email, through a real SMTP server."""

from __future__ import annotations

import io
import json
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import openpyxl
import pytest
from playwright.sync_api import Browser, expect

from relatorios.agendamentos import agenda
from relatorios.models import EstadoDoJob, Ocorrencia, RelatorioJob, Tenant
from relatorios.models.erp import Devolucao
from tests import helpers, processos
from tests.agendamentos.test_agendamentos_processos import RAPIDO, segundos_a_frente
from tests.conftest import CaixaSmtp
from tests.paginas.test_navegador import (
    ESPERA_MS,
    entrar,
    gerente,
    id_do_job,
    navegador,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

SP = ZoneInfo("America/Sao_Paulo")
CONTABILIDADE = "contabilidade@redesul.com"


def meses() -> tuple[date, date, date]:
    """The first and last days of last month (in the tenant's zone, the
    month a schedule's `mes_anterior` names today), and the month before's
    first day."""
    fim = datetime.now(SP).date().replace(day=1) - timedelta(days=1)
    inicio = fim.replace(day=1)
    return inicio, fim, (inicio - timedelta(days=1)).replace(day=1)


def rede_sul(tenant: Tenant, inicio: date, anterior: date) -> None:
    """Two stores. L001: 150.00 of sales last month (100.00 the month before)
    by a 5% seller, 20.00 returned (10.00), 10 units at 10.00 in stock until
    3 left last month. L002: one sale of 80.00 by a 3% seller, nothing else."""
    l1, l2 = helpers.criar_lojas(tenant, "L001", "L002")
    produto = helpers.criar_produto(tenant, "10.00")
    cinco, tres = (helpers.criar_vendedor(tenant, t) for t in ("0.0500", "0.0300"))

    def vender(loja: Any, vendedor: Any, dia: date, valor: str) -> Any:
        return helpers.criar_venda(
            loja=loja,
            vendedor=vendedor,
            produto=produto,
            data_hora=datetime.combine(dia, datetime.min.time(), UTC)
            + timedelta(hours=15),
            valor=valor,
        )

    devolvidas = [
        (vender(l1, cinco, anterior + timedelta(days=9), "100.00"), "10.00"),
        (vender(l1, cinco, inicio + timedelta(days=4), "100.00"), "20.00"),
    ]
    vender(l1, cinco, inicio + timedelta(days=9), "50.00")
    vender(l2, tres, inicio + timedelta(days=14), "80.00")
    for venda, valor in devolvidas:
        Devolucao.objects.create(
            tenant=tenant,
            loja=l1,
            venda=venda,
            data_hora=venda.data_hora + timedelta(days=2),
            quantidade=1,
            valor=valor,
        )
    helpers.criar_movimento(
        loja=l1, produto=produto, data=anterior - timedelta(days=1), quantidade=10
    )
    helpers.criar_movimento(
        loja=l1, produto=produto, data=inicio + timedelta(days=4), quantidade=-3
    )


def figuras(*valores: str | None) -> dict[str, str | None]:
    nomes = ("receita", "devolucoes", "comissoes", "estoque_final")
    campos: dict[str, str | None] = {}
    for nome, valor, variacao in zip(nomes, valores[::2], valores[1::2], strict=True):
        campos[nome] = valor
        campos[f"variacao_{nome}"] = variacao
    return campos


def pedir_pela_api(servidor: str, token: str, params: dict[str, str]) -> int:
    corpo = json.dumps(params).encode()
    status, cabecalhos, _ = processos.requisitar(
        "POST", f"{servidor}/relatorios/fechamento", token=token, corpo=corpo
    )
    assert status == 202
    return int(cabecalhos["Location"].rsplit("/", 1)[-1])


def pronto(servidor: str, token: str, job_id: int) -> dict[str, Any] | None:
    """The job's status body once `pronto` (None before)."""
    url = f"{servidor}/relatorios/jobs/{job_id}"
    corpo: dict[str, Any] = processos.requisitar("GET", url, token=token)[2]
    return corpo if corpo["status"] == "pronto" else None


def baixar(url: str, token: str) -> bytes:
    pedido = urllib.request.Request(url)
    pedido.add_header("Authorization", f"Token {token}")
    with urllib.request.urlopen(pedido, timeout=60) as resposta:
        conteudo: bytes = resposta.read()
    return conteudo


def linhas_da_planilha(conteudo: bytes) -> list[list[Any]]:
    folha = openpyxl.load_workbook(io.BytesIO(conteudo)).active
    # The table, under the header block (excel.TOPO).
    return [[celula.value for celula in linha] for linha in folha.iter_rows(min_row=6)]


def test_fechamento_pela_api_na_pagina_em_excel_agendado_e_por_email(
    cluster: Callable[..., processos.Processo],
    servidor: str,
    smtp: CaixaSmtp,
    ajustes: Callable[..., None],
    navegador: Browser,  # noqa: F811
    pasta_saida: Path,
) -> None:
    ajustes(
        **RAPIDO,
        RELATORIOS_ENTREGA_BACKOFF_S=0.2,
        RELATORIOS_URL_BASE=servidor,
        **smtp.ambiente(),
    )
    inicio, fim, anterior = meses()
    params = {"inicio": inicio.isoformat(), "fim": fim.isoformat()}
    tenant = helpers.criar_tenant("Rede Sul")
    rede_sul(tenant, inicio, anterior)
    gerente(tenant, "ana")
    token = helpers.criar_usuario(tenant)[1]
    cluster()

    # A client program: submit, poll, download the workbook.
    job_id = pedir_pela_api(servidor, token, params)
    estado = helpers.esperar(
        lambda: pronto(servidor, token, job_id),
        timeout=90,
        descricao="o fechamento pronto",
    )
    planilha = baixar(f"{servidor}/relatorios/jobs/{job_id}/resultado.xlsx", token)

    assert estado["resultado"] == {
        "mes": inicio.strftime("%Y-%m"),
        "mes_anterior": anterior.strftime("%Y-%m"),
        "linhas": [
            {
                "loja": "L001",
                "loja_nome": "Loja L001",
                # 150 vs 100; 20 vs 10; 5% of each; 7 units vs 10, at 10.00.
                **figuras(
                    "150.00",
                    "0.5000",
                    "20.00",
                    "1.0000",
                    "7.50",
                    "0.5000",
                    "70.00",
                    "-0.3000",
                ),
            },
            {
                "loja": "L002",
                "loja_nome": "Loja L002",
                # Nothing the month before: no change to speak of.
                **figuras("80.00", None, "0.00", None, "2.40", None, "0.00", None),
            },
        ],
        # 230 vs 100; 20 vs 10; 9.90 vs 5.00; 70 vs 100.
        "totais": figuras(
            "230.00", "1.3000", "20.00", "1.0000", "9.90", "0.9800", "70.00", "-0.3000"
        ),
    }
    assert linhas_da_planilha(planilha) == [
        [
            "Loja",
            "Nome da loja",
            "Receita (R$)",
            "Receita × mês anterior",
            "Devoluções (R$)",
            "Devoluções × mês anterior",
            "Comissões (R$)",
            "Comissões × mês anterior",
            "Estoque final (R$)",
            "Estoque × mês anterior",
        ],
        ["L001", "Loja L001", 150, 0.5, 20, 1, 7.5, 0.5, 70, -0.3],
        ["L002", "Loja L002", 80, None, 0, None, 2.4, None, 0, None],
        # Money sums; a change is the totals' own, not a sum of changes.
        [
            "Total",
            None,
            "=SUM(C7:C8)",
            1.3,
            "=SUM(E7:E8)",
            1,
            "=SUM(G7:G8)",
            0.98,
            "=SUM(I7:I8)",
            -0.3,
        ],
    ]

    # The manager: the form suggests last month, and lands on the same job,
    # with its chart drawn.
    contexto = navegador.new_context(
        viewport={"width": 1100, "height": 1000}, locale="pt-BR"
    )
    pagina = contexto.new_page()
    pagina.set_default_timeout(ESPERA_MS)
    entrar(pagina, servidor, "ana")
    formulario = pagina.locator("#pedido-fechamento")
    sugerido = [
        formulario.locator(f"input[name='fechamento-{campo}']").input_value()
        for campo in ("inicio", "fim")
    ]
    formulario.locator("button[type=submit]").click()
    na_pagina = id_do_job(pagina)
    expect(pagina.locator("figure.grafico")).to_have_class("grafico desenhado")
    desenhado = pagina.evaluate(
        """() => {
          const c = Chart.getChart(document.querySelector('canvas[data-grafico]'));
          return {tipo: c.config.type, rotulos: c.data.labels,
                  series: c.data.datasets.map(d => [d.label, d.data])};
        }"""
    )
    celulas = pagina.locator("table.resultado tbody tr").first.locator("td")
    primeira_linha = celulas.all_inner_texts()
    pagina.locator("#job").screenshot(path=str(pasta_saida / "fechamento.png"))
    contexto.close()

    assert sugerido == [params["inicio"], params["fim"]]
    assert na_pagina == job_id
    assert desenhado == {
        "tipo": "bar",
        "rotulos": ["Loja L001", "Loja L002"],
        "series": [["Receita (R$)", [150, 80]]],
    }
    assert primeira_linha[:4] == ["L001", "Loja L001", "150,00", "+50,00%"]

    # The 1st-of-the-month schedule: its firing is the same request, so the
    # same job; accounting gets the workbook once, by email.
    cron, _ = segundos_a_frente(1, 1)
    agendamento = agenda.criar(
        tenant_id=tenant.pk,
        tipo="fechamento",
        periodo="mes_anterior",
        cron=cron,
        prazo=timedelta(minutes=10),
        nome="Fechamento mensal",
        destinatarios=[CONTABILIDADE],
        usuario_id=None,
    )
    emails = helpers.esperar(
        lambda: smtp.para(CONTABILIDADE), timeout=90, descricao="o e-mail"
    )
    time.sleep(1)  # a duplicate would arrive now
    ocorrencia = Ocorrencia.objects.get(agendamento=agendamento)
    texto = emails[0].get_body(preferencelist=("plain",)).get_content()
    anexos = list(emails[0].iter_attachments())

    assert ocorrencia.job_id == job_id
    assert RelatorioJob.objects.get(pk=job_id).status == EstadoDoJob.PRONTO
    assert RelatorioJob.objects.count() == 1
    assert len(smtp.para(CONTABILIDADE)) == 1
    assert str(emails[0]["Subject"]).strip() == (
        "Relatório agendado pronto: Fechamento mensal "
        f"({inicio:%d/%m/%Y} a {fim:%d/%m/%Y})"
    )
    assert "Receita (R$): 230,00" in texto
    assert "Receita × mês anterior: +130,00%" in texto
    assert [a.get_filename() for a in anexos] == [
        f"fechamento_{params['inicio']}_{params['fim']}_job{job_id}.xlsx"
    ]
    assert linhas_da_planilha(anexos[0].get_content()) == linhas_da_planilha(planilha)
