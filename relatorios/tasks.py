"""django-q2 entry points: take an id, call the code that owns the work."""

from __future__ import annotations

from relatorios import execucao, notificacoes


def executar_relatorio(job_id: int) -> None:
    execucao.executar(job_id=job_id)


def entregar(entrega_id: int) -> None:
    notificacoes.entregar(entrega_id=entrega_id)
