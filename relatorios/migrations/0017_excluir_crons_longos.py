"""Schedules stored before agenda.CRON_MAX with a longer cron are deleted (soft).

Every page and API answer that shows a schedule's next firings parses its cron
again, and so do pausing and resuming it: a 240 KB cron took seconds each
time (issue 17). No real cron comes near 200 characters (every hour and every
day of the month listed one by one is 153), so such a row is a probe; deleted
is the one state nothing parses again (a paused one can be resumed). Its
occurrences and alerts stay, as for any deleted schedule.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import migrations
from django.db.models.functions import Length, Now

logger = logging.getLogger(__name__)

# agenda.CRON_MAX when this was written: a migration keeps its own copy.
CRON_MAX = 200


def excluir_crons_longos(apps: Any, schema_editor: Any) -> None:
    Agendamento = apps.get_model("relatorios", "Agendamento")
    longos = Agendamento.objects.annotate(tamanho=Length("cron")).filter(
        tamanho__gt=CRON_MAX, excluido_em__isnull=True
    )
    ids = sorted(longos.values_list("pk", flat=True))
    if not ids:
        return
    # As agenda.excluir leaves a schedule, without walking its cron for the
    # occurrences it owed (that walk is the cost this avoids).
    Agendamento.objects.filter(pk__in=ids, ativo=True).update(
        pausado_em=Now(), verificado_ate=Now()
    )
    Agendamento.objects.filter(pk__in=ids).update(
        ativo=False,
        excluido_em=Now(),
        proximo_disparo=None,
        proxima_verificacao=None,
    )
    logger.warning(
        "agendamentos com cron longo demais excluídos",
        extra={"agendamento_ids": ids, "cron_max": CRON_MAX},
    )


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0016_indice_das_entregas_por_job"),
    ]

    operations = [
        migrations.RunPython(excluir_crons_longos, migrations.RunPython.noop),
    ]
