"""Signed download links: a scheduled report's file for a recipient who has no login.

Accounting gets the monthly close by email; most of its people are not users
of the service. The email (and the `agendamento.entregue` webhook) carries a
link that needs no session: `/baixar/<token>`, where the token is signed with
the deployment's SECRET_KEY (Django's `TimestampSigner`, its own salt) and
names one job of one tenant, **the instant that result was finished**, and
the delivery it was sent in (the occurrence, and the recipient's address or
the webhook). So the link:

- opens that one file and nothing else: another job, another tenant or a
  changed id breaks the signature;
- stops when the result changes: a job recomputed after its result expired
  has another `concluido_em`, and the old link answers that it is gone;
- is revoked (410) when support expires the result ("expirar resultado",
  `revogar`), when the schedule is deleted, when the recipient is removed
  from it, or the webhook it was sent to is removed or deactivated;
- expires after RELATORIOS_LINK_VALIDADE_DIAS (7) days, and with the result
  itself (retention; `expira_em` is not checked: a report delivered is the
  recipient's to download for the link's life, as long as the row exists);
- opens at most RELATORIOS_DOWNLOAD_LIMITE_LINK times per window, and one
  client address at most RELATORIOS_DOWNLOAD_LIMITE_ENDERECO downloads per
  window (`contar`; a 429 with Retry-After).

It is a bearer link, like any "download" link in an email: whoever holds it
gets that file. Its life is bounded and it grants nothing else. Links sent
before deliveries named their destination open under the other rules.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.db import connection

from relatorios.models import EstadoDoJob, RelatorioJob

_SAL = "relatorios.notificacoes.links.download"


class LinkInvalido(Exception):
    """Not a link we signed (or altered): answered as not found."""


class LinkExpirado(Exception):
    """A link we signed whose time or result is gone: answered as gone (410)."""


@dataclass(frozen=True)
class Download:
    """What a valid link opens: one finished job, and the delivery it was sent
    in (None for links sent before deliveries named theirs)."""

    job: RelatorioJob
    ocorrencia_id: int | None = None
    destino: str | None = None


def validade() -> timedelta:
    return timedelta(days=settings.RELATORIOS_LINK_VALIDADE_DIAS)


def destino_email(email: str) -> str:
    """A link's destination: a recipient, by a digest of the address (the
    token is readable by whoever holds it; the address need not be)."""
    return "e:" + hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]


def destino_webhook(webhook_id: int) -> str:
    return f"w:{webhook_id}"


def assinar(
    *,
    job_id: int,
    tenant_id: int,
    concluido_em: datetime,
    ocorrencia_id: int | None = None,
    destino: str | None = None,
) -> str:
    """The token of a link to this job's current result, sent in this
    occurrence's delivery to `destino`."""
    dados: dict[str, object] = {
        "j": job_id,
        "t": tenant_id,
        "c": concluido_em.isoformat(),
    }
    if ocorrencia_id is not None and destino is not None:
        dados |= {"o": ocorrencia_id, "d": destino}
    return signing.TimestampSigner(salt=_SAL).sign_object(dados, compress=True)


def url(
    *,
    job_id: int,
    tenant_id: int,
    concluido_em: datetime,
    ocorrencia_id: int | None = None,
    destino: str | None = None,
) -> str:
    token = assinar(
        job_id=job_id,
        tenant_id=tenant_id,
        concluido_em=concluido_em,
        ocorrencia_id=ocorrencia_id,
        destino=destino,
    )
    return f"{settings.RELATORIOS_URL_BASE}/baixar/{token}"


_GONE = "este relatório não está mais disponível por este link"


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
        or job.status != EstadoDoJob.PRONTO
        or job.concluido_em is None
        or job.concluido_em.isoformat() != dados["c"]
    ):
        raise LinkExpirado(_GONE)
    ocorrencia_id, destino = dados.get("o"), dados.get("d")
    if _revogado(job, ocorrencia_id, destino):
        raise LinkExpirado(_GONE)
    if isinstance(ocorrencia_id, int) and isinstance(destino, str):
        return Download(job=job, ocorrencia_id=ocorrencia_id, destino=destino)
    return Download(job=job)


def _revogado(job: RelatorioJob, ocorrencia_id: object, destino: object) -> bool:
    """Support expired this result, or the delivery the link was sent in is
    gone: its schedule deleted, its recipient or webhook removed."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT EXISTS (SELECT 1 FROM relatorio_links_revogados
                            WHERE job_id = %(job)s AND concluido_em = %(concluido)s),
                   (SELECT g.excluido_em IS NULL
                       AND CASE WHEN left(%(destino)s, 2) = 'e:' THEN EXISTS (
                                SELECT 1
                                  FROM jsonb_array_elements_text(g.destinatarios) e
                                 WHERE left(encode(sha256(convert_to(lower(btrim(e)),
                                                  'UTF8')), 'hex'), 32)
                                       = substr(%(destino)s, 3))
                                WHEN left(%(destino)s, 2) = 'w:' THEN EXISTS (
                                SELECT 1 FROM relatorio_webhooks w
                                 WHERE w.id::text = substr(%(destino)s, 3) AND w.ativo
                                   AND g.webhooks @> to_jsonb(w.id))
                                ELSE false END
                      FROM relatorio_ocorrencias o
                      JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
                     WHERE o.id = %(ocorrencia)s AND o.tenant_id = %(tenant)s)
            """,
            {
                "job": job.pk,
                "concluido": job.concluido_em,
                "ocorrencia": ocorrencia_id if isinstance(ocorrencia_id, int) else None,
                "destino": destino if isinstance(destino, str) else "",
                "tenant": job.tenant_id,
            },
        )
        revogado, entrega_valida = cursor.fetchone()
    if revogado:
        return True
    # A link that names no delivery (sent before they did) has nothing more
    # to check; one that names a delivery needs it to stand.
    return ocorrencia_id is not None and not entrega_valida


def revogar(*, job_id: int, concluido_em: datetime) -> None:
    """End every link to this result (in the caller's transaction)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO relatorio_links_revogados (job_id, concluido_em)
            VALUES (%s, %s) ON CONFLICT (job_id, concluido_em) DO NOTHING
            """,
            [job_id, concluido_em],
        )


# Counts one download against a key's window and says how many the window
# has now and how many seconds are left in it, on the database's clock.
_CONTAR = """
    INSERT INTO relatorio_limites_download AS l (chave, janela, pedidos)
    SELECT k, floor(extract(epoch FROM now()) / %(janela)s)::bigint, 1
      FROM unnest(%(chaves)s::text[]) AS k
    ON CONFLICT (chave) DO UPDATE
       SET pedidos = CASE WHEN l.janela = EXCLUDED.janela THEN l.pedidos + 1 ELSE 1 END,
           janela = EXCLUDED.janela
    RETURNING chave, pedidos, (l.janela + 1) * %(janela)s - extract(epoch FROM now())
"""


def contar(*, token: str, endereco: str) -> int | None:
    """Count a download of this link from this address; the seconds to wait
    if either is over its limit, else None. One statement for both."""
    janela = max(1, settings.RELATORIOS_DOWNLOAD_JANELA_S)
    chave_link = "link:" + hashlib.sha256(token.encode()).hexdigest()[:32]
    limites = {
        chave_link: settings.RELATORIOS_DOWNLOAD_LIMITE_LINK,
        f"endereco:{endereco}": settings.RELATORIOS_DOWNLOAD_LIMITE_ENDERECO,
    }
    with connection.cursor() as cursor:
        cursor.execute(_CONTAR, {"janela": janela, "chaves": list(limites)})
        contagens = cursor.fetchall()
    esperas = [
        max(1, math.ceil(float(restante)))
        for chave, pedidos, restante in contagens
        if 0 < limites[chave] < pedidos
    ]
    return max(esperas) if esperas else None


def expurgar_contagens() -> int:
    """Forget the counters of windows already over (one row per link and
    address ever seen would otherwise stay forever)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            DELETE FROM relatorio_limites_download
             WHERE janela < floor(extract(epoch FROM now()) / %s)::bigint
            """,
            [max(1, settings.RELATORIOS_DOWNLOAD_JANELA_S)],
        )
        return cursor.rowcount
