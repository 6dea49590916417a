"""WSGI entry point (config/servidor.py serves it with granian)."""

import os

from django.core.wsgi import get_wsgi_application

from config.arranque import exigir_web

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

# The same refusal as config/servidor.py's before its workers, for a server started
# without that file: a worker that cannot serve fails to boot, loudly.
exigir_web()
