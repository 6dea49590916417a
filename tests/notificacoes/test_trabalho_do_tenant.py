"""A tenant's deliveries run under its own budget, with real clusters and a
real SMTP server: the workbook of a scheduled report is built once however
many recipients and retries, and one tenant's fan-out never stands in front
of another tenant's report."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from relatorios.agendamentos import alertas, disparo
from relatorios.apresentacao import excel
from relatorios.jobs import pedidos
from relatorios.models import (
    Arquivo,
    Entrega,
    EstadoDoJob,
    EstadoEntrega,
    Evento,
    Ocorrencia,
    RelatorioJob,
    Tenant,
)
from relatorios.notificacoes import saida
from tests import helpers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

RAPIDO = {
    "RELATORIOS_AGENDADOR_S": 0.3,
    "RELATORIOS_VARREDURA_S": 0.5,
    "RELATORIOS_BATIMENTO_S": 0.5,
    "RELATORIOS_ENTREGA_BACKOFF_S": 0.2,
    "RELATORIOS_ENTREGA_BACKOFF_MAX_S": 0.5,
}


def agendado(tenant: Tenant, destinatarios: list[str], **campos: Any) -> Ocorrencia:
    """A schedule of `teste_volumoso`, fired now: the cluster runs its job, and
    its checker delivers it once `pronto`."""
    agendamento = helpers.criar_agendamento(
        tenant,
        tipo="teste_volumoso",
        periodo="ontem",
        cron="0 3 * * *",
        destinatarios=destinatarios,
        **campos,
    )
    disparo.disparar(agora=agendamento.proximo_disparo)
    return Ocorrencia.objects.get(agendamento=agendamento)


def anexos(mensagem: Any) -> list[bytes]:
    return [
        parte.get_content()
        for parte in mensagem.iter_attachments()
        if parte.get_filename().endswith(".xlsx")
    ]


def test_a_planilha_e_feita_uma_vez_para_todos_os_destinatarios_e_tentativas(
    cluster: Callable[..., Any], ajustes: Callable[..., None], smtp: Any
) -> None:
    ajustes(**RAPIDO, **smtp.ambiente())
    smtp.recusar = 1  # the first recipient's first attempt: a transient 451
    tenant = helpers.criar_tenant("Rede Norte")
    destinatarios = [f"leitor{i}@rede.com.br" for i in range(3)]
    ocorrencia = agendado(tenant, destinatarios)
    processo = cluster()

    helpers.esperar(
        lambda: len(smtp.recebidas) >= 3, descricao="um e-mail a cada destinatário"
    )

    assert smtp.recusadas == 1
    assert sorted(d for destinos, _ in smtp.recebidas for d in destinos) == sorted(
        destinatarios
    )
    planilhas = [anexos(m) for _, m in smtp.recebidas]
    assert all(len(p) == 1 for p in planilhas)
    assert len({p[0] for p in planilhas}) == 1  # the same file for everyone
    tentativas = sorted(
        Entrega.objects.filter(ocorrencia_id=ocorrencia.pk).values_list(
            "tentativas", flat=True
        )
    )
    assert tentativas == [1, 1, 2]
    assert processo.texto_do_log().count("arquivo gerado") == 1
    assert Arquivo.objects.filter(job_id=ocorrencia.job_id).count() == 1


def test_o_leque_de_um_tenant_nao_fica_na_frente_do_relatorio_de_outro(
    cluster: Callable[..., Any], ajustes: Callable[..., None], smtp: Any
) -> None:
    ajustes(**RAPIDO, **smtp.ambiente(), RELATORIOS_WORKERS=2)
    smtp.atraso_s = 0.4  # a slow relay: twenty emails take eight seconds
    barulhento = helpers.criar_tenant("Rede Barulhenta")
    vizinho = helpers.criar_tenant("Rede Vizinha")
    helpers.criar_lojas(vizinho, "L001")
    ocorrencia = agendado(
        barulhento,
        [f"leitor{i}@barulhenta.com.br" for i in range(20)],
        entrega="link",
    )
    cluster()
    helpers.esperar(
        lambda: smtp.recebidas or None, descricao="o leque começou a ser enviado"
    )

    # Sampled while the fan-out goes on: never more of it in flight than its
    # slots, whatever the queue holds.
    submissao = pedidos.submeter(
        tenant_id=vizinho.pk,
        tipo="teste_fechamento",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-31"},
        usuario_id=None,
    )
    em_voo: list[int] = []
    while helpers.job(submissao.job.id).status != EstadoDoJob.PRONTO:
        em_voo.append(
            Entrega.objects.filter(
                tenant=barulhento,
                estado=EstadoEntrega.PENDENTE,
                enfileirada_em__isnull=False,
            ).count()
        )
        assert len(em_voo) < 600, "o relatório do vizinho não terminou em 60 s"
        time.sleep(0.1)
    concluido_em = helpers.job(submissao.job.id).concluido_em

    helpers.esperar(
        lambda: (
            Entrega.objects.filter(
                ocorrencia_id=ocorrencia.pk, estado=EstadoEntrega.ENTREGUE
            ).count()
            == 20
        ),
        timeout=120,
        descricao="o leque inteiro entregue",
    )
    antes_do_vizinho = Entrega.objects.filter(
        ocorrencia_id=ocorrencia.pk, entregue_em__lt=concluido_em
    ).count()
    # One delivery in flight, plus the one that ended as the report was
    # claimed: the neighbour waited for at most one delivery's work.
    assert antes_do_vizinho <= 3
    assert max(em_voo) <= 1
    assert Entrega.objects.filter(ocorrencia_id=ocorrencia.pk).count() == 20


def test_o_anexo_que_nao_cabe_nem_e_construido(
    tenant: Tenant, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    construcoes: list[int] = []
    original = excel.gravar_xlsx

    def contando(job: RelatorioJob, destino: Any) -> int:
        construcoes.append(job.pk)
        return original(job, destino)

    monkeypatch.setattr(excel, "gravar_xlsx", contando)
    settings.RELATORIOS_ENTREGA_ANEXO_MAX_BYTES = 1000
    agendamento = helpers.criar_agendamento(
        tenant,
        tipo="teste_volumoso",
        periodo="ontem",
        cron="0 3 * * *",
        destinatarios=["a@rede.com.br", "b@rede.com.br"],
    )
    disparo.disparar(agora=agendamento.proximo_disparo)
    ocorrencia = Ocorrencia.objects.get(agendamento=agendamento)
    linhas = [
        {"loja": "L001", "produto": f"Produto {n}", "receita": "10.50", "itens": n}
        for n in range(2000)
    ]
    RelatorioJob.objects.filter(pk=ocorrencia.job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado={"linhas": linhas, "totais": {"itens": sum(range(2000))}},
        concluido_em=timezone.now(),
        expira_em=timezone.now() + timedelta(days=1),
    )
    alertas.verificar()
    helpers.entregar_em_voo()

    assert [m.to for m in mail.outbox] == [["a@rede.com.br"], ["b@rede.com.br"]]
    assert all(not m.attachments for m in mail.outbox)
    assert all("/baixar/" in m.body for m in mail.outbox)
    assert construcoes == []
    assert Entrega.objects.filter(evento=Evento.AGENDAMENTO_ENTREGUE).count() == 2


def test_cota_diaria_de_emails_do_tenant_poupa_o_suporte(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_MAX_EMAILS_POR_TENANT_DIA = 2
    settings.RELATORIOS_EMAILS_SUPORTE = ["suporte@relatorios.com"]
    agendamento = helpers.criar_agendamento(
        tenant,
        tipo="teste_volumoso",
        periodo="ontem",
        cron="0 3 * * *",
        prazo=timedelta(minutes=5),
        destinatarios=["a@rede.com.br", "b@rede.com.br", "c@rede.com.br"],
    )
    # Missed: an alert to the three and to support.
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=1))
    emails = {
        e.destinatarios[0]: e
        for e in Entrega.objects.filter(evento=Evento.ALERTA_ABERTO, canal="email")
    }

    assert {e: emails[e].estado for e in sorted(emails)} == {
        "a@rede.com.br": EstadoEntrega.PENDENTE,
        "b@rede.com.br": EstadoEntrega.PENDENTE,
        "c@rede.com.br": EstadoEntrega.FALHOU,
        "suporte@relatorios.com": EstadoEntrega.PENDENTE,
    }
    assert "limite diário" in emails["c@rede.com.br"].ultimo_erro
    helpers.entregar_em_voo()
    assert sorted(m.to[0] for m in mail.outbox) == [
        "a@rede.com.br",
        "b@rede.com.br",
        "suporte@relatorios.com",
    ]
    # Support decides: a resend goes past the cap.
    assert saida.reenviar(entrega_id=emails["c@rede.com.br"].pk)
    helpers.entregar_em_voo()
    assert mail.outbox[-1].to == ["c@rede.com.br"]


def test_endereco_que_as_regras_de_hoje_recusam_falha_no_envio_sem_retentar(
    tenant: Tenant, settings: Any
) -> None:
    settings.RELATORIOS_EMAILS_SUPORTE = ["suporte@relatorios.com"]
    agendamento = helpers.criar_agendamento(
        tenant,
        tipo="teste_volumoso",
        periodo="ontem",
        cron="0 3 * * *",
        prazo=timedelta(minutes=5),
        destinatarios=["a@rede.com.br"],
    )
    # The tenant's allowed domains changed behind the service's back (or a
    # delivery was queued before support saved them).
    Tenant.objects.filter(pk=tenant.pk).update(dominios_email=["outra.com.br"])
    alertas.verificar(agora=agendamento.proximo_disparo + timedelta(hours=1))
    helpers.entregar_em_voo()

    recusada = Entrega.objects.get(canal="email", destinatarios=["a@rede.com.br"])
    assert (recusada.estado, recusada.tentativas) == (EstadoEntrega.FALHOU, 1)
    assert "destinatário recusado" in recusada.ultimo_erro
    # Support's own address is not the tenant's to restrict.
    assert [m.to for m in mail.outbox] == [["suporte@relatorios.com"]]
