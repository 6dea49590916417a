"""WSGI entry point (config/servidor.py serves it with granian)."""

import os

import django

from config.arranque import exigir_web

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# get_wsgi_application(), with Django's handler extended by the API's shorter
# middleware chain for token calls (relatorios/api/cadeia.py).
django.setup(set_prefix=False)

from relatorios.api.cadeia import (  # noqa: E402 (needs the apps loaded)
    HandlerWsgi,
    sinais_do_servidor,
)

application = HandlerWsgi()
sinais_do_servidor()

# The same refusal as config/servidor.py's before its workers, for a server started
# without that file: a worker that cannot serve fails to boot, loudly.
exigir_web()
