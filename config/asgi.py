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
   opens its LISTEN connection; at shutdown every stream ends with its
   `retry:`, so clients reconnect to another process at once.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

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


application = HandlerDeEventos()

# A process that would sign with the published key fails to boot, loudly
# (config/arranque.py; it serves no page, so the static files do not matter).
_problema = problema_da_chave()
if _problema:
    raise RuntimeError(f"refusing to start: {_problema}")
