"""WSGI entry point for gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

from config.arranque import exigir_web

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

# The same refusal as config/gunicorn.py's on_starting, for a server started
# without that file: a worker that cannot serve fails to boot, loudly.
exigir_web()
