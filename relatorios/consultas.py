"""Tenant-scoped reads. Every read of a job goes through here.

Ids are sequential and easy to guess (seed 000): a job is looked up by id AND
tenant in the same query, and another tenant's job is simply not found (404),
so its existence never leaks.
"""

from __future__ import annotations

from django.http import Http404

from relatorios.models import RelatorioJob

# An id beyond PostgreSQL's bigint would be a database error, not a 404.
ID_MAXIMO = 2**63 - 1


def job_do_tenant(
    *, tenant_id: int, job_id: int, campos: tuple[str, ...] = ()
) -> RelatorioJob:
    if not 0 < job_id <= ID_MAXIMO:
        raise Http404("job não encontrado")
    consulta = RelatorioJob.objects.filter(pk=job_id, tenant_id=tenant_id)
    if campos:
        consulta = consulta.only(*campos)
    job = consulta.first()
    if job is None:
        raise Http404("job não encontrado")
    return job
