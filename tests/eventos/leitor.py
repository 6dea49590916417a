"""A real `Central` (the events process's reader) in a thread of the test
process, with one tenant-wide stream whose events are collected."""

from __future__ import annotations

import asyncio
import threading
import time
from types import TracebackType

from relatorios.eventos.central import Central
from relatorios.eventos.leitura import Aviso

# For a connection: a later deferred trigger that runs after the events' one
# (at COMMIT, once that one has taken its id). `INSERT INTO espera VALUES (n)`
# then makes the COMMIT sleep n seconds, or fail for n = 0.
DEPOIS_DO_EVENTO = """
    CREATE TEMP TABLE espera (x int);
    CREATE FUNCTION pg_temp.depois() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.x > 0 THEN PERFORM pg_sleep(NEW.x); ELSE RAISE 'desfeito'; END IF;
        RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER depois AFTER INSERT ON espera
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
        EXECUTE FUNCTION pg_temp.depois();
"""


class Leitor:
    """Start with `with Leitor(tenant_id) as leitor:`; `recebidos` holds
    (event, time.monotonic() of its arrival), in arrival order."""

    def __init__(self, tenant_id: int) -> None:
        self.tenant_id = tenant_id
        self.recebidos: list[tuple[Aviso, float]] = []
        self._laco = asyncio.new_event_loop()
        self._pronto = threading.Event()
        self._fio = threading.Thread(target=self._laco.run_forever, daemon=True)
        self._tarefa: asyncio.Task[None] | None = None
        self.central: Central | None = None

    def __enter__(self) -> Leitor:
        self._fio.start()
        self._tarefa = asyncio.run_coroutine_threadsafe(
            self._criar(), self._laco
        ).result(timeout=30)
        if not self._pronto.wait(30):
            raise AssertionError("o leitor não alcançou o banco")
        return self

    async def _criar(self) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(self._ouvir())

    async def _ouvir(self) -> None:
        self.central = Central()
        self.central.iniciar()
        await self.central.pronta(espera_s=30)
        assinatura = self.central.assinar(
            tenant_id=self.tenant_id, usuario_id=0, job_id=None
        )
        self._pronto.set()
        while True:
            item = await assinatura.proximo()
            if isinstance(item, Aviso):
                self.recebidos.append((item, time.monotonic()))

    def __exit__(
        self,
        tipo: type[BaseException] | None,
        erro: BaseException | None,
        rastro: TracebackType | None,
    ) -> None:
        async def parar() -> None:
            assert self._tarefa is not None
            self._tarefa.cancel()
            if self.central is not None:
                await self.central.parar()

        asyncio.run_coroutine_threadsafe(parar(), self._laco).result(timeout=30)
        self._laco.call_soon_threadsafe(self._laco.stop)
        self._fio.join(timeout=30)
        self._laco.close()

    def ids(self) -> list[int]:
        return [aviso.id for aviso, _ in self.recebidos]
