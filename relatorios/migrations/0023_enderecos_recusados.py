"""Stored email addresses that notificacoes/enderecos.py now refuses are removed.

The rule refuses what was never a mailbox of the tenant's: control characters
and quoted local parts (one broke the header block of the alert email, which
went to every recipient and to support), IP literals, dotless domains
(`postmaster@localhost`) and RFC 2047 encoded words. They are removed here,
at deploy, rather than left to fail at each send: the hole closes without
waiting for the send side, and the pages stop listing recipients who would
never get anything. A schedule keeps its other recipients (possibly none:
then only its webhooks and support hear of it); a job's email subscription
with such an address is deleted. A tenant's allowed domains are not applied
here: every list is empty now, and a list set later is checked where the
email is sent (`enderecos.recusa_no_envio`).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import migrations

logger = logging.getLogger(__name__)


def remover_enderecos_recusados(apps: Any, schema_editor: Any) -> None:
    from relatorios.notificacoes.enderecos import motivo_da_recusa

    def aceito(endereco: Any) -> bool:
        return isinstance(endereco, str) and motivo_da_recusa(endereco) is None

    Agendamento = apps.get_model("relatorios", "Agendamento")
    Inscricao = apps.get_model("relatorios", "Inscricao")
    agendamentos = []
    for agendamento in (
        Agendamento.objects.exclude(destinatarios=[])
        .only("id", "destinatarios")
        .iterator()
    ):
        aceitos = [e for e in agendamento.destinatarios or [] if aceito(e)]
        if aceitos != agendamento.destinatarios:
            Agendamento.objects.filter(pk=agendamento.pk).update(destinatarios=aceitos)
            agendamentos.append(agendamento.pk)
    inscricoes = [
        pk
        for pk, email in Inscricao.objects.values_list("pk", "email").iterator()
        if not aceito(email)
    ]
    Inscricao.objects.filter(pk__in=inscricoes).delete()
    if agendamentos or inscricoes:
        logger.warning(
            "e-mails recusados removidos",
            extra={"agendamento_ids": agendamentos, "inscricao_ids": inscricoes},
        )


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", '0022_dominios_de_email'),
    ]

    operations = [
        migrations.RunPython(remover_enderecos_recusados, migrations.RunPython.noop),
    ]
