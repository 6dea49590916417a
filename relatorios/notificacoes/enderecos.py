"""The one rule for every email address a tenant gives us, and its allowed domains.

A schedule's `destinatarios` (API, pages, admin), the address a request's
`notificar_email` sends to (the user's own), and a user's email as support
enters it, all pass `validar`. An address is delivered to as it is written,
so anything whose envelope could differ from what a person reads, or that
reaches inside our own network, is refused:

- control characters and invisible format characters (a line break in an
  address breaks the header block of the email it is put in);
- a quoted local part (`"x\\f"@a.example`: RFC 5321 allows almost anything
  between the quotes);
- an IP-literal domain (`a@[10.0.0.5]`): mail to an address of our choosing,
  not to a domain's MX;
- a domain without a dot (`postmaster@localhost`): the relay's own host or a
  name of the local network;
- an RFC 2047 encoded word (`=?utf-8?q?...?=`): mail software decodes it for
  display, so the address shown is not the one the message goes to;
- anything else Django's EmailValidator refuses (an ASCII local part; a
  domain of valid labels, international ones as IDNA);
- with a tenant's allowed domains (`Tenant.dominios_email`, set by support;
  empty: any domain), a domain that is not one of them or under one of them.

Addresses stored before this rule are re-checked where they are sent:
`recusa_no_envio` says why one must not be (docs/seguranca.md).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

from relatorios.models import Tenant
from relatorios.tipos.normalizacao import ErroDeParametro

# RFC 5321's limit on an address, and Django's EmailField's.
EMAIL_MAX = 254
# A domain name's limit (RFC 1035), in its IDNA form.
DOMINIO_MAX = 253

# Django's validator without its default allowlist, which admits `localhost`.
_DJANGO = EmailValidator(allowlist=[])
# Unicode categories no address may hold: controls, format characters (bidi
# overrides, zero-width joiners), line and paragraph separators, surrogates,
# private use, unassigned. (A space is only possible between quotes, refused
# below, and Django refuses it anywhere else.)
_PROIBIDAS = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def motivo_da_recusa(endereco: str, *, dominios: Sequence[str] = ()) -> str | None:
    """Why this address is refused, in pt-BR; None if it is accepted.

    `dominios`: the tenant's allowed domains (IDNA, lower case), empty for any.
    """
    if len(endereco) > EMAIL_MAX:
        return f"e-mail de até {EMAIL_MAX} caracteres"
    if any(unicodedata.category(c) in _PROIBIDAS for c in endereco):
        return "e-mail com caractere de controle ou invisível"
    if '"' in endereco or "\\" in endereco:
        return "e-mail entre aspas não é aceito"
    if "=?" in endereco:
        return "e-mail com palavra codificada (=?...?=) não é aceito"
    local, arroba, dominio = endereco.rpartition("@")
    if not (arroba and local and dominio):
        return "e-mail inválido"
    if dominio.startswith("["):
        return "e-mail com IP no lugar do domínio não é aceito"
    if "." not in dominio.strip("."):
        return "o domínio do e-mail precisa de um ponto (ex.: empresa.com.br)"
    try:
        _DJANGO(endereco)
    except ValidationError:
        return "e-mail inválido"
    if dominios and not _sob_algum(_idna(dominio), dominios):
        return f"domínio fora dos permitidos para esta empresa: {', '.join(dominios)}"
    return None


def validar(valor: Any, *, campo: str, dominios: Sequence[str] = ()) -> str:
    """The address, stripped and in lower case; ErroDeParametro naming `campo`."""
    if not isinstance(valor, str):
        raise ErroDeParametro(campo, "cada destinatário é um e-mail")
    endereco = valor.strip()
    motivo = motivo_da_recusa(endereco, dominios=dominios)
    if motivo is not None:
        # The address is quoted only when it is printable (the reason says
        # what is wrong with the others).
        citado = endereco if endereco.isprintable() else ""
        raise ErroDeParametro(campo, f"{motivo}: {citado}" if citado else motivo)
    return endereco.lower()


def dominios_permitidos(tenant_id: int) -> list[str]:
    """The tenant's allowed domains; empty: any domain."""
    dominios = (
        Tenant.objects.filter(pk=tenant_id)
        .values_list("dominios_email", flat=True)
        .first()
    )
    return list(dominios or [])


def recusa_no_envio(*, tenant_id: int, endereco: str) -> str | None:
    """Why a stored address must not be sent to (None: send it).

    For the send side: an address stored before this rule or before the
    tenant's allowed domains changed. One query (the tenant's domains).
    """
    return motivo_da_recusa(endereco, dominios=dominios_permitidos(tenant_id))


def normalizar_dominio(texto: str) -> str:
    """An allowed domain as stored: IDNA, lower case; ValueError if it is not one."""
    dominio = texto.strip().lower().rstrip(".")
    if motivo_da_recusa(f"postmaster@{dominio}") is not None:
        raise ValueError(f"domínio inválido: {texto.strip()[:80]}")
    convertido = _idna(dominio)
    if len(convertido) > DOMINIO_MAX:
        raise ValueError(f"domínio de até {DOMINIO_MAX} caracteres")
    return convertido


def _idna(dominio: str) -> str:
    try:
        return dominio.lower().encode("idna").decode("ascii")
    except UnicodeError:
        return dominio.lower()


def _sob_algum(dominio: str, permitidos: Sequence[str]) -> bool:
    return any(dominio == p or dominio.endswith(f".{p}") for p in permitidos)
