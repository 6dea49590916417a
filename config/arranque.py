"""What a serving process refuses to start without (README, "Deploy checklist").

A deployment must not half-start: a web process without the collected static
files answers 500 on every page, and one signing with the published dev key
lets anyone forge sessions and queue messages. Both are found here, before a
worker is forked, with a message that names what is missing.

Plain Python over `django.conf.settings`: the web's launcher
(config/servidor.py) calls it before Django's apps are loaded.
"""

from __future__ import annotations

from relatorios.operacao.chave import CHAVE_DE_DESENVOLVIMENTO, problema_da_chave

__all__ = ["CHAVE_DE_DESENVOLVIMENTO", "exigir_web", "problema_da_chave"]


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


def problema_dos_eventos() -> str | None:
    """The events process's knobs (relatorios/eventos/central.py)."""
    from django.conf import settings

    revisao = settings.RELATORIOS_EVENTOS_REVISAO_S
    if not 0 < revisao <= 5:
        return (
            f"RELATORIOS_EVENTOS_REVISAO_S={revisao:g}: must be > 0 and <= 5 "
            "(a revoked credential's open streams end within it; docs/api.md "
            "promises 5 s)"
        )
    vida = settings.RELATORIOS_EVENTOS_VIDA_MAX_S
    if vida <= 0:
        return f"RELATORIOS_EVENTOS_VIDA_MAX_S={vida:g}: must be > 0"
    por_tenant = settings.RELATORIOS_EVENTOS_MAX_POR_TENANT
    if por_tenant <= 0:
        return f"RELATORIOS_EVENTOS_MAX_POR_TENANT={por_tenant}: must be > 0"
    espera = settings.RELATORIOS_EVENTOS_ESPERA_BANCO_S
    if espera <= 0:
        return f"RELATORIOS_EVENTOS_ESPERA_BANCO_S={espera:g}: must be > 0"
    return None


def problemas_do_web() -> list[str]:
    return [p for p in (problema_da_chave(), problema_dos_estaticos()) if p]


def exigir_web() -> None:
    """Raises RuntimeError (the launcher logs it, exits 1) if the web cannot serve."""
    problemas = problemas_do_web()
    if problemas:
        raise RuntimeError("refusing to start: " + "; ".join(problemas))
