"""Signed download links: a scheduled report's file for a recipient who has no login.

Accounting gets the monthly close by email; most of its people are not users
of the service. The email (and the `agendamento.entregue` webhook) carries a
link that needs no session: `/baixar/<token>`, where the token is signed with
the deployment's SECRET_KEY (Django's `TimestampSigner`, its own salt) and
names one job of one tenant **and the instant that result was finished**.
So the link:

- opens that one file and nothing else: another job, another tenant or a
  changed id breaks the signature;
- stops when the result changes: a job recomputed after its result expired
  has another `concluido_em`, and the old link answers that it is gone;
- expires after RELATORIOS_LINK_VALIDADE_DIAS (7) days, and with the result
  itself (retention, `expira_em` is not checked: a report delivered is the
  recipient's to download for the link's life, as long as the row exists).

It is a bearer link, like any "download" link in an email: whoever holds it
gets that file. Its life is bounded and it grants nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing

from relatorios.models import RelatorioJob, Status

_SAL = "relatorios.notificacoes.links.download"


class LinkInvalido(Exception):
    """Not a link we signed (or altered): answered as not found."""


class LinkExpirado(Exception):
    """A link we signed whose time or result is gone: answered as gone (410)."""


@dataclass(frozen=True)
class Download:
    """What a valid link opens: one finished job."""

    job: RelatorioJob


def validade() -> timedelta:
    return timedelta(days=settings.RELATORIOS_LINK_VALIDADE_DIAS)


def assinar(*, job_id: int, tenant_id: int, concluido_em: datetime) -> str:
    """The token of a link to this job's current result."""
    return signing.TimestampSigner(salt=_SAL).sign_object(
        {"j": job_id, "t": tenant_id, "c": concluido_em.isoformat()}, compress=True
    )


def url(*, job_id: int, tenant_id: int, concluido_em: datetime) -> str:
    token = assinar(job_id=job_id, tenant_id=tenant_id, concluido_em=concluido_em)
    return f"{settings.RELATORIOS_URL_BASE}/baixar/{token}"


def abrir(token: str) -> Download:
    """The job a token opens, or LinkInvalido / LinkExpirado."""
    assinador = signing.TimestampSigner(salt=_SAL)
    try:
        dados = assinador.unsign_object(token, max_age=validade())
    except signing.SignatureExpired:
        raise LinkExpirado("o link expirou") from None
    except (signing.BadSignature, ValueError, TypeError):
        raise LinkInvalido("link inválido") from None
    if not isinstance(dados, dict) or not {"j", "t", "c"} <= set(dados):
        raise LinkInvalido("link inválido")
    job = (
        RelatorioJob.objects.filter(pk=dados["j"], tenant_id=dados["t"])
        .only("id", "tenant_id", "tipo", "status", "params", "concluido_em")
        .first()
    )
    if (
        job is None
        or job.status != Status.PRONTO
        or job.concluido_em is None
        or job.concluido_em.isoformat() != dados["c"]
    ):
        raise LinkExpirado("este relatório não está mais disponível por este link")
    return Download(job=job)
