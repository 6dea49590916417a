"""django-q2 entry points: take an id, call the code that owns the work."""

from __future__ import annotations

from relatorios.jobs import execucao
from relatorios.notificacoes import entrega


def executar_relatorio(job_id: int) -> None:
    execucao.executar(job_id=job_id)


def entregar(entrega_id: int) -> None:
    entrega.entregar(entrega_id=entrega_id)
