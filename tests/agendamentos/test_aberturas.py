"""Who opens a scheduled report: the first and last open per occurrence and
destination, from the signed link, the job page and the file downloads; a
schedule's reading over its last deliveries; the flag and its metric."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.db.models import F
from django.test import Client

from relatorios.agendamentos import aberturas, agenda
from relatorios.models import Abertura, Agendamento, Ocorrencia, Tenant
from relatorios.notificacoes import links
from relatorios.operacao import metricas
from tests import helpers, processos
from tests.agendamentos.entregues import LEITORES, agendamento, entregar, link
from tests.operacao.test_metricas import TOKEN_DAS_METRICAS, raspar

pytestmark = pytest.mark.django_db


def aberturas_de(ocorrencia: Ocorrencia) -> list[tuple[str, bool]]:
    """(destination, first == last) of each row of this occurrence."""
    return sorted(
        (a.destino, a.primeira_em == a.ultima_em)
        for a in Abertura.objects.filter(ocorrencia=ocorrencia)
    )


def baixar(caminho: str) -> int:
    resposta = Client().get(caminho)
    if resposta.streaming:
        b"".join(resposta.streaming_content)
    return int(resposta.status_code)


def envelhecer(ocorrencia: Ocorrencia, minutos: int) -> None:
    Abertura.objects.filter(ocorrencia=ocorrencia).update(
        primeira_em=F("primeira_em") - timedelta(minutes=minutos),
        ultima_em=F("ultima_em") - timedelta(minutes=minutos),
    )


def gerente(tenant: Tenant, email: str = "") -> Client:
    usuario, _ = helpers.criar_usuario(tenant, email=email)
    cliente = Client()
    cliente.force_login(usuario)
    return cliente


def test_o_link_registra_a_primeira_e_a_ultima_abertura_uma_vez_por_minuto(
    tenant: Tenant,
) -> None:
    (ocorrencia,) = entregar(agendamento(tenant))
    caminho = link(ocorrencia, LEITORES[0])
    de_ana = links.destino_email(LEITORES[0])

    assert aberturas_de(ocorrencia) == []
    assert baixar(caminho) == 200
    assert aberturas_de(ocorrencia) == [(de_ana, True)]
    primeira = Abertura.objects.get().primeira_em

    # Again within the minute: nothing written.
    envelhecer(ocorrencia, 0)
    assert baixar(caminho) == 200
    assert Abertura.objects.get().ultima_em == primeira

    # Two minutes later: the last open moves, the first stays.
    envelhecer(ocorrencia, 2)
    assert baixar(caminho) == 200
    depois = Abertura.objects.get()
    assert depois.primeira_em == primeira - timedelta(minutes=2)
    assert depois.ultima_em > depois.primeira_em + timedelta(minutes=1)

    # The other recipient's link is another row.
    assert baixar(link(ocorrencia, LEITORES[1])) == 200
    assert [d for d, _ in aberturas_de(ocorrencia)] == sorted(
        [de_ana, links.destino_email(LEITORES[1])]
    )


def test_a_pagina_do_job_e_os_arquivos_registram_pelo_email_do_usuario(
    tenant: Tenant,
) -> None:
    (ocorrencia,) = entregar(agendamento(tenant))
    ana = gerente(tenant, email=LEITORES[0].upper())
    sem_email, token = helpers.criar_usuario(tenant, email="")
    api = helpers.cliente_com_token(token)

    assert ana.get(f"/painel/jobs/{ocorrencia.job_id}/").status_code == 200
    # Her own link too: the same recipient, the same row.
    assert baixar(link(ocorrencia, LEITORES[0])) == 200
    # The status endpoint and the page's polled fragment are not opens.
    assert api.get(f"/relatorios/jobs/{ocorrencia.job_id}").status_code == 200
    assert ana.get(f"/painel/jobs/{ocorrencia.job_id}/estado/").status_code == 200
    assert aberturas_de(ocorrencia) == [(links.destino_email(LEITORES[0]), True)]

    resposta = api.get(f"/relatorios/jobs/{ocorrencia.job_id}/resultado.csv")
    b"".join(resposta.streaming_content)
    assert resposta.status_code == 200
    assert aberturas_de(ocorrencia) == sorted(
        [(links.destino_email(LEITORES[0]), True), (f"u:{sem_email.pk}", True)]
    )
    envelhecer(ocorrencia, 5)
    resposta = api.get(f"/relatorios/jobs/{ocorrencia.job_id}/resultado.xlsx")
    b"".join(resposta.streaming_content)
    assert resposta.status_code == 200
    assert aberturas_de(ocorrencia) == sorted(
        [(links.destino_email(LEITORES[0]), True), (f"u:{sem_email.pk}", False)]
    )


def test_um_job_que_nenhum_agendamento_entregou_nao_registra_nada(
    tenant: Tenant,
) -> None:
    programado = agendamento(tenant)
    (ocorrencia,) = entregar(programado)
    Ocorrencia.objects.filter(pk=ocorrencia.pk).update(entregue_em=None)
    ana = gerente(tenant, email=LEITORES[0])

    assert ana.get(f"/painel/jobs/{ocorrencia.job_id}/").status_code == 200
    assert Abertura.objects.count() == 0


def test_as_aberturas_de_outro_tenant_nunca_contam(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    programado = agendamento(tenant)
    (ocorrencia,) = entregar(programado)
    intruso = gerente(outro_tenant, email=LEITORES[0])
    _, token = helpers.criar_usuario(outro_tenant)
    api = helpers.cliente_com_token(token)

    assert intruso.get(f"/painel/jobs/{ocorrencia.job_id}/").status_code == 404
    csv = api.get(f"/relatorios/jobs/{ocorrencia.job_id}/resultado.csv")
    assert csv.status_code == 404
    # The service is scoped too: another tenant's id names nothing of A's.
    aberturas.registrar_job(
        tenant_id=outro_tenant.pk, job_id=ocorrencia.job_id, usuario=None
    )
    aberturas.registrar_link(
        tenant_id=outro_tenant.pk, ocorrencia_id=ocorrencia.pk, destino="e:x"
    )

    assert Abertura.objects.count() == 0
    assert aberturas.leituras([programado.pk])[programado.pk] == aberturas.Leitura(
        entregas=1, abertas=0, anexo=False, sem_leitura=False
    )


def test_a_leitura_conta_as_ultimas_dez_entregas_e_sinaliza_tres_sem_abertura(
    tenant: Tenant,
) -> None:
    lido = agendamento(tenant, nome="lido")
    ignorado = agendamento(tenant, nome="ignorado")
    anexado = agendamento(tenant, nome="anexado", entrega="anexo")
    nunca = agendamento(tenant, nome="nunca entregue")
    do_lido = entregar(lido, 12)
    entregar(ignorado, 3)
    entregar(anexado, 3)
    # Opened: the two oldest (out of the last 10) and the 4th newest.
    for ocorrencia in (do_lido[0], do_lido[1], do_lido[8]):
        assert baixar(link(ocorrencia, LEITORES[1])) == 200

    leituras = aberturas.leituras([lido.pk, ignorado.pk, anexado.pk, nunca.pk])

    assert leituras == {
        lido.pk: aberturas.Leitura(
            entregas=10, abertas=1, anexo=False, sem_leitura=True
        ),
        ignorado.pk: aberturas.Leitura(
            entregas=3, abertas=0, anexo=False, sem_leitura=True
        ),
        # Attachments: their opens are not seen, so never flagged.
        anexado.pk: aberturas.Leitura(
            entregas=3, abertas=0, anexo=True, sem_leitura=False
        ),
    }


def test_a_forma_de_cada_entrega_e_a_do_momento_em_que_foi_entregue(
    tenant: Tenant,
) -> None:
    mudou = agendamento(tenant, entrega="anexo")
    entregar(mudou, 2)
    assert agenda.alterar_entrega(
        agendamento_id=mudou.pk, tenant_id=tenant.pk, entrega="link"
    )
    entregar(mudou, 1)

    formas = list(
        Ocorrencia.objects.filter(agendamento=mudou)
        .order_by("id")
        .values_list("entregue_como", flat=True)
    )

    assert formas == ["anexo", "anexo", "link"]
    # Two of its last three were attachments: not flagged.
    assert not aberturas.leituras([mudou.pk])[mudou.pk].sem_leitura


def test_a_regra_da_metrica_e_a_da_pagina() -> None:
    assert metricas.SEM_LEITURA == aberturas.SEM_LEITURA


@pytest.mark.processos
@pytest.mark.django_db(transaction=True)
def test_a_metrica_conta_os_agendamentos_ativos_sem_leitura_por_http_real(
    tenant: Tenant,
    outro_tenant: Tenant,
    ajustes: Callable[..., None],
    pasta_saida: Path,
) -> None:
    ajustes(
        RELATORIOS_METRICAS_REDES="10.255.0.0/16",
        RELATORIOS_METRICAS_TOKEN=TOKEN_DAS_METRICAS,
    )
    ignorado = agendamento(tenant, nome="ignorado")
    pausado = agendamento(tenant, nome="pausado")
    lido = agendamento(outro_tenant, nome="lido")
    anexado = agendamento(outro_tenant, nome="anexado", entrega="anexo")
    entregar(ignorado, 3)
    entregar(pausado, 3)
    entregar(anexado, 3)
    do_lido = entregar(lido, 3)
    assert agenda.pausar(agendamento_id=pausado.pk)
    web, url = processos.iniciar_web(pasta_saida / "web.log")
    try:
        antes = raspar_sem_leitura(url)
        # The newest delivery of the read one is opened over real HTTP, by link.
        with urllib.request.urlopen(f"{url}{link(do_lido[-1], LEITORES[0])}") as r:
            r.read()
        depois_do_link = raspar_sem_leitura(url)
    finally:
        web.parar()

    # Flagged: the ignored one and, before its link was opened, the read one;
    # never the paused one nor the attachments (another tenant's or not).
    assert (antes, depois_do_link) == (2, 1)
    assert [a.destino for a in Abertura.objects.all()] == [
        links.destino_email(LEITORES[0])
    ]


def raspar_sem_leitura(url: str) -> float:
    raspagem = raspar(f"{url}/metrics", token=TOKEN_DAS_METRICAS)
    return raspagem[("relatorios_agendamentos_sem_leitura", ())]


def test_a_pagina_dos_gerentes_mostra_a_leitura_e_sinaliza_o_que_ninguem_abre(
    tenant: Tenant, outro_tenant: Tenant
) -> None:
    ignorado = agendamento(tenant, nome="Ignorado")
    lido = agendamento(tenant, nome="Lido")
    anexado = agendamento(tenant, nome="Anexado", entrega="anexo")
    novo = agendamento(tenant, nome="Novo")
    alheio = agendamento(outro_tenant, nome="Alheio")
    entregar(ignorado, 3)
    entregar(anexado, 3)
    entregar(alheio, 3)
    (do_lido, *_) = entregar(lido, 3)
    assert baixar(link(do_lido, LEITORES[0])) == 200

    html = gerente(tenant).get("/painel/agendamentos/").content.decode()

    def celula(programado: Agendamento) -> str:
        linha = html[html.index(f'<tr data-agendamento="{programado.pk}"') :]
        linha = linha[linha.index('data-campo="aberturas"') :]
        return " ".join(linha[: linha.index("</td>")].split())

    assert "aberto em 0 das últimas 3 entregas" in celula(ignorado)
    assert "ninguém abriu as últimas 3" in celula(ignorado)
    assert "aberto em 1 das últimas 3 entregas" in celula(lido)
    assert "ninguém abriu" not in celula(lido)
    assert "anexo: aberturas não rastreáveis" in celula(anexado)
    assert "ninguém abriu" not in celula(anexado)
    assert "nenhuma entrega ainda" in celula(novo)
    assert "das últimas 10 entregas de cada agendamento" in html
    # The flag names this tenant's ignored schedule alone, with its pause.
    sinal = html[html.index('id="sem-leitura"') : html.index("</section>")]
    assert f'data-sem-leitura="{ignorado.pk}"' in sinal
    assert sinal.count("data-sem-leitura=") == 1
    assert f"/painel/agendamentos/{ignorado.pk}/pausar/" in sinal
    assert "Alheio" not in html


def test_um_agendamento_pausado_nao_e_sinalizado(tenant: Tenant) -> None:
    ignorado = agendamento(tenant, nome="Ignorado")
    entregar(ignorado, 3)
    assert agenda.pausar(agendamento_id=ignorado.pk)

    html = gerente(tenant).get("/painel/agendamentos/").content.decode()

    assert 'id="sem-leitura"' not in html
    assert "aberto em 0 das últimas 3 entregas" in html


def test_o_admin_mostra_a_leitura_na_lista_e_no_agendamento(tenant: Tenant) -> None:
    ignorado = agendamento(tenant, nome="Ignorado")
    anexado = agendamento(tenant, nome="Anexado", entrega="anexo")
    entregar(ignorado, 3)
    entregar(anexado, 2)
    suporte = Client()
    suporte.force_login(
        helpers.criar_usuario(None, is_superuser=True, is_staff=True)[0]
    )

    lista = suporte.get("/admin/relatorios/agendamento/").content.decode()
    detalhe = suporte.get(
        f"/admin/relatorios/agendamento/{ignorado.pk}/change/"
    ).content.decode()

    assert "Aberturas (últimas 10 entregas)" in lista
    assert "aberto em 0 das últimas 3 entregas" in lista
    assert "aberto em 0 das últimas 2 entregas" in lista
    assert "anexo: aberturas não rastreáveis" in lista
    assert "aberto em 0 das últimas 3 entregas" in detalhe
    assert "ninguém abriu as últimas 3 (sinalizado ao gerente)" in detalhe
