"""Which of the events read from the table a process may publish, in id order.

The triggers take an event's id from the sequence at COMMIT, with no lock
(relatorios/banco/sql/relatorios_publicar.sql), so two commits that overlap
can become visible out of id order: a reader may see id n+1 while n's
transaction is still committing, or n's transaction may roll back after
taking it (a gap forever). Publishing n+1 at once would let a client resume
from n+1 and never get n.

So the reader publishes an event only when every id below it is settled:
published, or missing for longer than RELATORIOS_EVENTOS_ESPERA_LACUNA_S
since a higher id was first seen. Between taking its id and becoming
visible a transaction only finishes its COMMIT (the id is taken by a
deferred trigger, at the commit), so a few milliseconds; past the wait the
id is taken for a rollback and the stream moves on. An event whose commit
took longer than that would be read by a stream resuming from before it,
but not sent live: the reader logs it (`tardios`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from relatorios.eventos.leitura import Aviso

logger = logging.getLogger(__name__)

# At most this many ids of one gap are watched for a late commit.
PULADOS_POR_LACUNA = 64


class Ordem:
    """A process's position in the events and the gaps it is waiting on."""

    def __init__(self, *, posicao: int, espera_s: float) -> None:
        # Every id up to here is published or given up on.
        self.posicao = posicao
        self.espera_s = espera_s
        # (id, when first seen): each id was, when first read, the highest
        # visible; every missing id below it has been missing since then.
        self._marcos: list[tuple[int, float]] = []
        # Ids given up on, with when: checked for a late commit (`tardios`).
        self.pulados: dict[int, float] = {}

    def avancar(self, avisos: Sequence[Aviso], agora: float) -> list[Aviso]:
        """Of `avisos` (the events after `posicao`, in id order, as one read
        saw them), those that may be published now; moves `posicao` past them.

        Stops at the first gap that has been open for less than the wait:
        the next read sees again what comes after it.
        """
        if avisos and (not self._marcos or avisos[-1].id > self._marcos[-1][0]):
            self._marcos.append((avisos[-1].id, agora))
        prontos: list[Aviso] = []
        for aviso in avisos:
            if aviso.id > self.posicao + 1:
                desde = next(t for i, t in self._marcos if i >= aviso.id)
                if agora - desde < self.espera_s:
                    break
                logger.info(
                    "eventos ausentes além da espera: seguindo sem eles",
                    extra={"de": self.posicao + 1, "ate": aviso.id - 1},
                )
                # A bounded record: a gap is a rollback (or a crash's
                # sequence jump of up to 32), rarely many ids.
                for ausente in range(
                    self.posicao + 1, min(aviso.id, self.posicao + 65)
                ):
                    self.pulados[ausente] = agora
            prontos.append(aviso)
            self.posicao = aviso.id
        self._marcos = [m for m in self._marcos if m[0] > self.posicao]
        return prontos

    def tardios(self, visiveis: Sequence[int], agora: float, guarda_s: float) -> None:
        """`visiveis`: the given-up ids now in the table. Each is an event
        that committed after the wait (the streams of this process did not
        get it live); logged, and forgotten like every id older than
        `guarda_s`."""
        for evento_id in visiveis:
            logger.warning(
                "evento visível depois da espera por lacuna: não enviado ao vivo",
                extra={"evento": evento_id, "espera_s": self.espera_s},
            )
            self.pulados.pop(evento_id, None)
        for evento_id, quando in list(self.pulados.items()):
            if agora - quando > guarda_s:
                del self.pulados[evento_id]
