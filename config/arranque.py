"""What a serving process refuses to start without (README, "Deploy checklist").

A deployment must not half-start: a web process without the collected static
files answers 500 on every page, and one signing with the published dev key
lets anyone forge sessions and queue messages. Both are found here, before a
worker is forked, with a message that names what is missing.

Plain Python over `django.conf.settings`: the web's launcher
(config/servidor.py) calls it before Django's apps are loaded.
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


def problema_dos_estaticos() -> str | None:
    """The manifest of hashed static names; pages link through it (DEBUG off)."""
    from django.conf import settings
    from django.contrib.staticfiles.storage import staticfiles_storage

    if settings.DEBUG:
        return None  # Django links unhashed names in debug: no manifest needed
    nome = getattr(staticfiles_storage, "manifest_name", None)
    if nome is None:
        return None  # a storage without a manifest serves what it has
    if staticfiles_storage.exists(nome):
        return None
    return (
        f"static files not collected: {staticfiles_storage.path(nome)} is missing; "
        "run `python manage.py collectstatic --noinput` at build/release time "
        "(DJANGO_STATIC_ROOT says where)"
    )


def problemas_do_web() -> list[str]:
    return [p for p in (problema_da_chave(), problema_dos_estaticos()) if p]


def exigir_web() -> None:
    """Raises RuntimeError (the launcher logs it, exits 1) if the web cannot serve."""
    problemas = problemas_do_web()
    if problemas:
        raise RuntimeError("refusing to start: " + "; ".join(problemas))
