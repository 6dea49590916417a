"""The secret key a process must not run with (DEBUG off): the published one.

Plain Python over `django.conf.settings`, importable before Django's apps
load: settings, the web's launcher and the `qcluster` checks read it.
"""

from __future__ import annotations

# The key every clone has: fine for `make run` and the tests (each sets its
# own explicitly), never for a deployment. A process with DEBUG off refuses it.
CHAVE_DE_DESENVOLVIMENTO = "relatorios-dev-only-insecure-key-change-me"


def problema_da_chave() -> str | None:
    from django.conf import settings

    if settings.DEBUG:
        return None
    chave = str(getattr(settings, "SECRET_KEY", "") or "")
    if chave in ("", CHAVE_DE_DESENVOLVIMENTO):
        return (
            "DJANGO_SECRET_KEY is unset or the built-in development key (refused "
            "with DJANGO_DEBUG off): set DJANGO_SECRET_KEY to a long random secret, "
            "the same for the web and the clusters"
        )
    return None
