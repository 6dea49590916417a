"""django-q2's `qcluster`, with this project's supervisor in its main process.

It replaces django_q's command of the same name (this app is listed first),
so no deployment can run a cluster without the supervisor
(`relatorios/fila/supervisor.py`: the graceful stop, liveness, the replica's
look, the routines' loop). What is left here is the project's wiring: which
routines run, and the cluster's metrics server.

- the sweep (`varredura.varrer`) every RELATORIOS_VARREDURA_S. django-q2's
  scheduler only looks about every 30 s and per minute, too coarse; a loop in
  the cluster is restarted with it, and any number of copies is safe because
  every step is a guarded UPDATE. Dead clusters first: their prefetched
  messages become visible before the sweep looks for lost ones.
- the schedules' firing (`disparo.disparar`) and, after it, the absence
  checker (`alertas.verificar`: a due occurrence is fired, not recorded as
  unfired) every RELATORIOS_AGENDADOR_S; the notification outbox's sweep
  (`entrega.varrer`); the retention of old jobs and events every
  RELATORIOS_EXPURGO_S;
- computing ahead (`antecipacao.antecipar`) every RELATORIOS_ANTECIPAR_S
  when RELATORIOS_ANTECIPAR is on: each report is submitted once however
  many clusters run it (the submit's dedup by chave);
- metrics: with RELATORIOS_METRICAS_PORTA, the cluster serves its own
  (every process's counters plus the database gauges,
  relatorios/operacao/exposicao.py) from a thread, for hosts without a web
  server; exited workers' live gauges are dropped periodically (django-q2 has
  no hook for a worker's exit).

Adding a routine is one line in `rotinas`.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django_q.management.commands.qcluster import Command as QclusterDoDjangoQ

from relatorios.agendamentos import alertas, disparo
from relatorios.eventos import leitura
from relatorios.fila import clusters, supervisor
from relatorios.fila.supervisor import Rotina, Servidor, Supervisor
from relatorios.jobs import antecipacao, retencao, varredura
from relatorios.notificacoes import entrega
from relatorios.operacao import exposicao


class Command(QclusterDoDjangoQ):
    help = "Starts a django-q2 cluster with the sweeps, liveness and a graceful stop."

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("run_once"):
            super().handle(*args, **options)
            return
        settings.SECRET_KEY  # noqa: B018 (signing needs it: fail before forking)
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        supervisor.rodar(rotinas=rotinas, servir_metricas=servir_metricas)


def rotinas(s: Supervisor) -> list[Rotina]:
    """The project's periodic work, one line each, in the order each turn
    runs them."""
    intervalo = settings.RELATORIOS_VARREDURA_S
    agendador = settings.RELATORIOS_AGENDADOR_S

    def verificar() -> None:
        alertas.verificar()
        # Stamped after a pass that completed: /readyz reads a checker that
        # keeps failing as a silent one.
        clusters.marcar_verificador(cluster_id=s.cluster_id)

    antecipar: list[Rotina] = []
    if settings.RELATORIOS_ANTECIPAR:
        a_cada = settings.RELATORIOS_ANTECIPAR_S
        antecipar.append(Rotina("antecipação", a_cada, antecipacao.antecipar))
    return [
        Rotina("clusters mortos", intervalo, clusters.declarar_mortos),
        Rotina("varredura", intervalo, varredura.varrer),
        Rotina("agendador", agendador, disparo.disparar),
        Rotina("verificador", agendador, verificar),
        Rotina("entregas", intervalo, entrega.varrer),
        Rotina("retenção", settings.RELATORIOS_EXPURGO_S, retencao.expurgar),
        Rotina("eventos", settings.RELATORIOS_EXPURGO_S, leitura.expurgar),
        Rotina("métricas", intervalo, exposicao.esquecer_processos_mortos),
        *antecipar,
    ]


def servir_metricas() -> Servidor | None:
    porta = settings.RELATORIOS_METRICAS_PORTA
    if porta <= 0:
        return None
    return exposicao.servir_no_cluster(
        porta=porta, endereco=settings.RELATORIOS_METRICAS_ENDERECO
    )
