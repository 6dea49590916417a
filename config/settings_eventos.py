"""Settings of the events process (config/asgi.py): the project's, serving
the streams only, with the middleware they need.

The streams authenticate by token or by the pages' session, so the session
and authentication middleware stay; everything else in MIDDLEWARE serves
pages, forms or the WSGI process's own concerns. Each middleware left out is
also one thread hop per request less (all of these are async-capable).
"""

from __future__ import annotations

from config.settings import *  # noqa: F403

ROOT_URLCONF = "config.urls_eventos"
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
