"""ASGI entry point of the events process (config/eventos.py serves it with
granian's ASGI interface): the two event streams, and nothing else.

Django's ASGIHandler with two changes, both through public API:

1. Its thread-sensitive work (request signals, sync middleware, a session
   or token read) runs on one thread shared by every request of the
   process, not on a thread per request. Django opens a ThreadSensitiveContext
   per request, whose executor thread lives as long as the request: for a
   stream that is hours, and one idle thread (with its own database
   connection) per open stream. asgiref lets the context be given an
   executor; this one is the process's.
2. ASGI's lifespan: at startup the process's fan-out (`eventos.central`)
   opens its reading connection; at shutdown every stream ends with its
   `retry:`, so clients reconnect to another process at once.
3. `handle` is Django's with one task less per request: Django runs the
   response in a second task beside the one that waits for the client's
   disconnect; here the response runs in the request's own task, which the
   watcher cancels when the client leaves (granian does not raise on a
   write to a closed connection: the disconnect is the only news of it).
   Every object kept for a stream's lifetime counts in B9's memory per
   stream (budget: 40 KB, granian's own share of it ~28).
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import HttpResponseBase
from django.urls import set_script_prefix

from config.arranque import problema_da_chave

os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings_eventos"
django.setup(set_prefix=False)


class HandlerDeEventos(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.sincrono = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="relatorios-eventos-sync"
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.ciclo_de_vida(receive, send)
            return
        if scope["type"] != "http":
            raise ValueError(f"not an HTTP connection: {scope['type']}")
        async with ThreadSensitiveContext(executor=self.sincrono):
            await self.handle(scope, receive, send)

    async def handle(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        await signals.request_started.asend(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        response: HttpResponseBase | None = None
        vigia = asyncio.ensure_future(
            _cancelar_ao_desconectar(receive, asyncio.current_task())
        )
        try:
            response = (
                error_response
                if request is None
                else await self.run_get_response(request)
            )
            if response is not None:  # create_request returns one of the two
                await self.send_response(response, send)
        except asyncio.CancelledError:
            # The client left (the stream's generator was closed on the
            # way); any other cancellation goes on.
            if not vigia.done() or vigia.cancelled():
                raise
        finally:
            vigia.cancel()
            if response is not None:
                # Closing fires request_finished (old connections closed).
                await sync_to_async(response.close)()
            body_file.close()

    async def ciclo_de_vida(self, receive: Any, send: Any) -> None:
        from relatorios.eventos.central import central

        while True:
            mensagem = await receive()
            if mensagem["type"] == "lifespan.startup":
                central()
                await send({"type": "lifespan.startup.complete"})
            elif mensagem["type"] == "lifespan.shutdown":
                await central().parar()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _cancelar_ao_desconectar(receive: Any, tarefa: Any) -> None:
    mensagem = await receive()
    if mensagem["type"] == "http.disconnect":
        tarefa.cancel()


application = HandlerDeEventos()

# A process that would sign with the published key fails to boot, loudly
# (config/arranque.py; it serves no page, so the static files do not matter).
_problema = problema_da_chave()
if _problema:
    raise RuntimeError(f"refusing to start: {_problema}")
