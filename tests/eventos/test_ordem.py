"""The reader's ordering (eventos.ordem): ids in order, a gap waited on for
a bounded time counted from when a higher id was first seen. The clock is
the caller's, so these need no database; tests/eventos/test_publicacao.py
has the same behaviour with real overlapping commits."""

from __future__ import annotations

import logging

import pytest

from relatorios.eventos.leitura import Aviso
from relatorios.eventos.ordem import Ordem


def avisos(*ids: int) -> list[Aviso]:
    return [
        Aviso(id=i, tenant_id=1, job_id=None, tipo="job.pendente", em=None, dados={})
        for i in ids
    ]


def publicados(ordem: Ordem, agora: float, *ids: int) -> list[int]:
    return [a.id for a in ordem.avancar(avisos(*ids), agora)]


def test_sem_lacuna_publica_tudo_em_ordem() -> None:
    ordem = Ordem(posicao=10, espera_s=2)

    assert publicados(ordem, 0, 11, 12, 13) == [11, 12, 13]
    assert ordem.posicao == 13
    assert publicados(ordem, 0.1) == []


def test_lacuna_segura_os_seguintes_ate_se_preencher() -> None:
    ordem = Ordem(posicao=10, espera_s=2)

    assert publicados(ordem, 0, 11, 13, 14) == [11]
    assert publicados(ordem, 1.9, 13, 14) == []
    assert publicados(ordem, 1.95, 12, 13, 14) == [12, 13, 14]
    assert ordem.pulados == {}


def test_lacuna_alem_da_espera_e_pulada_e_um_commit_tardio_e_registrado(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ordem = Ordem(posicao=10, espera_s=2)

    assert publicados(ordem, 0, 13) == []
    assert publicados(ordem, 1.9, 13) == []
    assert publicados(ordem, 2.0, 13, 14) == [13, 14]
    assert sorted(ordem.pulados) == [11, 12]
    with caplog.at_level(logging.WARNING, logger="relatorios.eventos.ordem"):
        ordem.tardios([12], agora=3, guarda_s=60)
    avisos_tardios = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.evento for r in avisos_tardios] == [12]  # type: ignore[attr-defined]
    assert sorted(ordem.pulados) == [11]
    ordem.tardios([], agora=70, guarda_s=60)
    assert ordem.pulados == {}


def test_espera_conta_de_quando_um_id_maior_apareceu() -> None:
    """Id 15 appears only at t=1.5: the ids missing below it (13, 14) have
    been missing since then, not since the first gap (12) was seen."""
    ordem = Ordem(posicao=10, espera_s=2)

    assert publicados(ordem, 0, 11, 13) == [11]
    assert publicados(ordem, 1.5, 13, 15) == []
    assert publicados(ordem, 2.0, 13, 15) == [13]
    assert publicados(ordem, 3.4, 15) == []
    assert publicados(ordem, 3.5, 15) == [15]
    assert sorted(ordem.pulados) == [12, 14]
