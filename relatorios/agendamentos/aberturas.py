"""Is a scheduled report read? The first and last open of each delivery.

Seed 004, "Reduzir o trabalho": a report that takes ten minutes is often
processing data nobody looks at. So each delivered occurrence keeps, per
destination, when it was first and last opened (`Abertura`), and nothing
more: no count, no address, no client. An open is one of:

- the signed link's download (`/baixar/<token>`): the token names the
  occurrence and the destination (a digest of the recipient's address, or
  the webhook) it was sent to (`notificacoes.links`);
- a manager's job page of the occurrence's job, once it is `pronto`;
- the job's file downloads (CSV, .xlsx) through the API or a session.

The last two name a job, not an occurrence: every delivered occurrence of
the tenant with that job counts as opened, by that user (the digest of their
email, so a recipient who uses both the link and the page is one row).
The job's status endpoint (polled every few seconds) and the page's polled
fragment record nothing.

A schedule's reading is read over its last `ULTIMAS` deliveries; one whose
last `SEM_LEITURA` deliveries, all sent as links, were opened by nobody is
flagged to its managers (the page offers to pause it) and counted by the
metric `relatorios_agendamentos_sem_leitura`. An attachment's opens cannot
be seen (the file is read in the mail client), so a delivery sent as an
attachment never makes a schedule flagged (docs/agendamentos.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from relatorios.notificacoes import links

# Deliveries a schedule's "aberto em N das últimas M entregas" reads.
ULTIMAS = 10
# Unopened link deliveries in a row that flag a schedule.
SEM_LEITURA = 3

# Record an open of these occurrences by `destino`, at most once a minute per
# row, in one statement:
# 1. the occurrences: delivered, of the tenant (a job or an id from
#    elsewhere never records on another tenant's);
# 2. the rows already there and older than a minute get `ultima_em = now()`;
# 3. the others are inserted, and one that exists (opened within the minute,
#    or by a concurrent request) is left alone.
# Not `ON CONFLICT DO UPDATE ... WHERE ultima_em < ...`: that locks the
# existing row even when its WHERE is false, so a burst of clicks on one
# link would queue on it; an UPDATE whose WHERE is false takes no lock, and
# DO NOTHING none either.
_REGISTRAR = """
WITH alvo AS (
    SELECT o.id
      FROM relatorio_ocorrencias o
     WHERE o.tenant_id = %(tenant)s AND o.entregue_em IS NOT NULL
       AND {filtro}
),
renovadas AS (
    UPDATE relatorio_aberturas a SET ultima_em = now()
      FROM alvo
     WHERE a.ocorrencia_id = alvo.id AND a.destino = %(destino)s
       AND a.ultima_em < now() - interval '1 minute'
    RETURNING a.ocorrencia_id
)
INSERT INTO relatorio_aberturas AS a (ocorrencia_id, tenant_id, destino,
                                      primeira_em, ultima_em)
SELECT alvo.id, %(tenant)s, %(destino)s, now(), now()
  FROM alvo
 WHERE alvo.id NOT IN (SELECT ocorrencia_id FROM renovadas)
ON CONFLICT (ocorrencia_id, destino) DO NOTHING
"""

# By id: the primary key. By job: the occurrences' index on job_id.
_POR_OCORRENCIA = _REGISTRAR.format(filtro="o.id = %(ocorrencia)s")
_POR_JOB = _REGISTRAR.format(filtro="o.job_id = %(job)s")


def registrar_link(*, tenant_id: int, ocorrencia_id: int, destino: str) -> None:
    """An open of the signed link sent in this occurrence's delivery to `destino`."""
    with connection.cursor() as cursor:
        cursor.execute(
            _POR_OCORRENCIA,
            {"tenant": tenant_id, "ocorrencia": ocorrencia_id, "destino": destino},
        )


def registrar_job(*, tenant_id: int, job_id: int, usuario: object) -> None:
    """An open of a `pronto` job (its page, its file) by a logged-in user: one
    for each delivered occurrence of the tenant with this job (none for a job
    no schedule delivered, which writes nothing)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _POR_JOB,
            {
                "tenant": tenant_id,
                "job": job_id,
                "destino": destino_do_usuario(usuario),
            },
        )


def destino_do_usuario(usuario: object) -> str:
    """The destination a user's opens are recorded under: their address's, as
    a link sent to them would name it; their id when they have none."""
    email = getattr(usuario, "email", "") or ""
    if email.strip():
        return links.destino_email(email)
    return f"u:{getattr(usuario, 'pk', '')}"


@dataclass(frozen=True)
class Leitura:
    """How a schedule's last deliveries were read."""

    # Of its last ULTIMAS deliveries, how many there are and how many were
    # opened at least once.
    entregas: int
    abertas: int
    # Its last delivery was sent as an attachment (opens not all seen).
    anexo: bool
    # Its last SEM_LEITURA deliveries were all links and nobody opened them.
    sem_leitura: bool

    @property
    def frase(self) -> str:
        """'aberto em 2 das últimas 3 entregas'; one delivery in the singular."""
        if self.entregas == 1:
            return (
                "aberto na única entrega"
                if self.abertas
                else ("não aberto na única entrega")
            )
        return f"aberto em {self.abertas} das últimas {self.entregas} entregas"


_LEITURAS = """
SELECT u.agendamento_id,
       count(*),
       count(*) FILTER (WHERE u.aberta),
       bool_or(u.entregue_como = 'anexo') FILTER (WHERE u.ordem = 1),
       count(*) FILTER (WHERE u.ordem <= %(sem_leitura)s AND NOT u.aberta
                          AND u.entregue_como = 'link') = %(sem_leitura)s
  FROM (SELECT g.id AS agendamento_id, o.entregue_como,
               row_number() OVER (PARTITION BY g.id
                                  ORDER BY o.entregue_em DESC, o.id DESC)
                   AS ordem,
               a.aberta IS NOT NULL AS aberta
          FROM unnest(%(ids)s::bigint[]) AS g(id)
          CROSS JOIN LATERAL (
                SELECT o.id, o.entregue_em, o.entregue_como
                  FROM relatorio_ocorrencias o
                 WHERE o.agendamento_id = g.id AND o.entregue_em IS NOT NULL
                 ORDER BY o.entregue_em DESC, o.id DESC
                 LIMIT %(ultimas)s) AS o
          -- A lateral probe, not EXISTS: the planner turns an EXISTS here
          -- into a hash of the whole table of opens.
          LEFT JOIN LATERAL (
                SELECT true AS aberta FROM relatorio_aberturas a
                 WHERE a.ocorrencia_id = o.id LIMIT 1) AS a ON true) AS u
 GROUP BY u.agendamento_id
"""


def leituras(agendamento_ids: list[int]) -> dict[int, Leitura]:
    """Each schedule's reading, in one statement: its last ULTIMAS deliveries
    (the index on (agendamento, entregue_em)), each looked up in the opens'
    unique index. A schedule never delivered is absent."""
    if not agendamento_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            _LEITURAS,
            {"ids": agendamento_ids, "ultimas": ULTIMAS, "sem_leitura": SEM_LEITURA},
        )
        return {
            agendamento_id: Leitura(
                entregas=entregas,
                abertas=abertas,
                anexo=bool(anexo),
                sem_leitura=sem_leitura,
            )
            for agendamento_id, entregas, abertas, anexo, sem_leitura in cursor
        }
