"""Schedules with delivered occurrences, for the tests of their opens."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from relatorios.agendamentos import alertas, disparo
from relatorios.models import (
    Agendamento,
    Entrega,
    EstadoDoJob,
    Evento,
    Ocorrencia,
    RelatorioJob,
    Tenant,
)
from tests import helpers

LEITORES = ["ana@contabil.com.br", "bia@contabil.com.br"]


def agendamento(tenant: Tenant, **campos: Any) -> Agendamento:
    """A daily schedule sent to LEITORES (as links unless told otherwise)."""
    padrao: dict[str, Any] = {
        "tipo": "teste_volumoso",
        "periodo": "ontem",
        "cron": "0 3 * * *",
        "destinatarios": LEITORES,
        "entrega": "link",
    }
    return helpers.criar_agendamento(tenant, **(padrao | campos))


def entregar(agendamento: Agendamento, n: int = 1) -> list[Ocorrencia]:
    """Run it `n` times, one after another ("executar agora": this schedule
    alone, whatever others are due), each job `pronto` and delivered (the
    deliveries written to the outbox). Runs after the first reuse its job."""
    entregues = []
    for _ in range(n):
        ocorrencia = disparo.executar_agora(agendamento_id=agendamento.pk)
        # Only a new job: finishing it again would end the links already sent.
        RelatorioJob.objects.filter(pk=ocorrencia.job_id).exclude(
            status=EstadoDoJob.PRONTO
        ).update(
            status=EstadoDoJob.PRONTO,
            resultado={"linhas": [{"loja": "L001", "produto": "P", "itens": 3}]},
            concluido_em=timezone.now(),
            expira_em=timezone.now() + timedelta(days=1),
        )
        alertas.verificar()
        ocorrencia.refresh_from_db()
        assert ocorrencia.entregue_em is not None
        entregues.append(ocorrencia)
    return entregues


def link(ocorrencia: Ocorrencia, email: str) -> str:
    """The path of the link sent in this occurrence's delivery to `email`."""
    entrega = Entrega.objects.get(
        ocorrencia_id=ocorrencia.pk,
        evento=Evento.AGENDAMENTO_ENTREGUE,
        destinatarios=[email],
    )
    url = str(entrega.payload["data"]["download"]["url"])
    return url[url.index("/baixar/") :]
