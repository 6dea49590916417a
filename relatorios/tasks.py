"""django-q2 entry points: take an id, call the code that owns the work."""

from __future__ import annotations

from relatorios import execucao


def executar_relatorio(job_id: int) -> None:
    execucao.executar(job_id=job_id)
