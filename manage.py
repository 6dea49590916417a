#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if sys.argv[1:2] == ["qcluster"]:
        # Before Django loads prometheus_client: a cluster's processes share
        # one emptied metrics folder (config/metricas_dir.py).
        import atexit

        from config import metricas_dir

        pasta, privada = metricas_dir.preparar("cluster")
        if privada:
            atexit.register(metricas_dir.remover, pasta)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
