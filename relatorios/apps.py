from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks


class RelatoriosConfig(AppConfig):
    name = "relatorios"
    verbose_name = "Relatórios"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from relatorios import execucao

        post_spawn.connect(execucao.instalar_sinais, dispatch_uid="relatorios-sinais")
        checks.register(verificar_timeouts)
        checks.register(verificar_chave_secreta)


def verificar_timeouts(**kwargs: Any) -> list[checks.CheckMessage]:
    """django-q2 re-delivers a message after `retry` seconds; a report allowed to
    run longer than the budget `retry` was derived from would run twice."""
    from relatorios import tipos

    erros: list[checks.CheckMessage] = []
    for nome, tipo in tipos.registro().items():
        if tipo.timeout() > settings.RELATORIOS_TIMEOUT_S:
            erros.append(
                checks.Error(
                    f"tipo {nome}: timeout {tipo.timeout()} s passa de "
                    f"RELATORIOS_TIMEOUT_S ({settings.RELATORIOS_TIMEOUT_S} s)",
                    hint="raise RELATORIOS_TIMEOUT_S (Q_CLUSTER's retry follows it)",
                    id="relatorios.E001",
                )
            )
    return erros


def verificar_chave_secreta(**kwargs: Any) -> list[checks.CheckMessage]:
    """With DEBUG off, the published dev key is refused by every command that
    runs Django's checks, `qcluster` first among them: a cluster signing queue
    messages with a key anyone can read must not start. The web refuses it in
    config/servidor.py and config/wsgi.py (the web server runs no checks)."""
    from config.arranque import problema_da_chave

    problema = problema_da_chave()
    if problema is None:
        return []
    return [checks.Error(problema, id="relatorios.E002")]
