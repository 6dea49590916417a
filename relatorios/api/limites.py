"""Per-token request limit of the API: a fixed window counted in one statement.

DRF's stock throttles keep a list of timestamps in Django's cache: a read and
a write per request, and with the only shared store we have (PostgreSQL, via
Django's database cache) that is a transaction of three or four statements.
Here it is one UPSERT that counts and answers at once, on an unlogged table,
exact across every web process and host. A per-process counter would cost
nothing but make the limit "between N and N × workers × hosts".

The two hot endpoints (status, and submit's read by chave) do not even pay a
round trip for it: their view declares `conta_na_consulta`, the throttle
only hands the request a `Contagem`, and the view's first statement carries
the UPSERT as a CTE (`Contagem.cte`) and reports its figures back
(`Contagem.registrar`, which raises the 429). Whatever path does not reach
that statement (a 400 from normalization, a 404 from the URL) is counted on
its own when the response is finalized (`ContaNaConsulta`), so every request
counts exactly once.

A fixed window lets a client spend up to twice the limit across a window
boundary; for an abuse limit that is fine, and it needs no history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

# Counts this request and says how many the window has now and how many
# seconds are left in it, on the database's clock. Positional parameters:
# user, window, window.
_UPSERT = """
    INSERT INTO relatorio_limites_api AS l (usuario_id, janela, pedidos)
    VALUES (%s, floor(extract(epoch FROM now()) / %s)::bigint, 1)
    ON CONFLICT (usuario_id) DO UPDATE
       SET pedidos = CASE WHEN l.janela = EXCLUDED.janela THEN l.pedidos + 1 ELSE 1 END,
           janela = EXCLUDED.janela
    RETURNING pedidos,
              (l.janela + 1) * %s - extract(epoch FROM now()) AS restante
"""

# The attribute of the DRF request that carries its pending count.
_ATRIBUTO = "_contagem_do_limite"


class LimiteExcedido(exceptions.Throttled):
    """429 with Retry-After; the handler shapes it as {"erro": ...}."""

    def __init__(self, *, wait: int, detail: str) -> None:
        # Given `wait`, DRF appends its own sentence to the message, in its
        # translation ("Espera-se que esteja diponível em N segundos."): ours
        # already says when to come back. Retry-After reads `self.wait`.
        super().__init__(detail=detail)
        self.wait = wait


@dataclass
class Contagem:
    """One request's count against its user's limit, not yet made.

    `cte`/`parametros` put the UPSERT in front of a statement as `WITH
    limite AS (...)`, exposing `limite.pedidos` and `limite.restante`; the
    statement's caller passes them to `registrar`. Or `contar` runs it alone.
    """

    usuario_id: int
    limite: int
    janela_s: int
    feita: bool = False

    @property
    def cte(self) -> str:
        return f"limite AS ({_UPSERT})"

    @property
    def parametros(self) -> list[Any]:
        return [self.usuario_id, self.janela_s, self.janela_s]

    def contar(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(_UPSERT, self.parametros)
            pedidos, restante = cursor.fetchone()
        self.registrar(pedidos, restante)

    def registrar(self, pedidos: int, restante: Any) -> None:
        """The statement ran: this request is counted; 429 if over the limit."""
        self.feita = True
        if pedidos <= self.limite:
            return
        espera = max(1, math.ceil(float(restante)))
        raise LimiteExcedido(
            wait=espera,
            detail=(
                f"limite de {self.limite} pedidos a cada {self.janela_s} s "
                f"excedido: tente de novo em {espera} s"
            ),
        )


def contagem_do_pedido(request: Request) -> Contagem | None:
    """The count a `conta_na_consulta` view's statement must carry, if any."""
    contagem = getattr(request, _ATRIBUTO, None)
    if contagem is None or contagem.feita:
        return None
    return contagem


def _contagem_nova(request: Request) -> Contagem | None:
    """This request's count, or None when the limit is off or nobody is
    authenticated (the 401 comes from authentication)."""
    limite = settings.RELATORIOS_API_LIMITE
    usuario_id = getattr(request.user, "pk", None)
    if limite <= 0 or usuario_id is None:
        return None
    return Contagem(
        usuario_id=usuario_id,
        limite=limite,
        janela_s=max(1, int(settings.RELATORIOS_API_JANELA_S)),
    )


def contar_para(usuario_id: int) -> None:
    """Count one request of `usuario_id` outside DRF (an event stream's
    open: relatorios/api/eventos.py); LimiteExcedido past the limit."""
    limite = settings.RELATORIOS_API_LIMITE
    if limite <= 0:
        return
    Contagem(
        usuario_id=usuario_id,
        limite=limite,
        janela_s=max(1, int(settings.RELATORIOS_API_JANELA_S)),
    ).contar()


class LimitePorToken(BaseThrottle):
    """RELATORIOS_API_LIMITE requests per RELATORIOS_API_JANELA_S per user."""

    def allow_request(self, request: Request, view: Any) -> bool:
        contagem = _contagem_nova(request)
        if contagem is None:
            return True
        if getattr(view, "conta_na_consulta", False):
            setattr(request, _ATRIBUTO, contagem)
        else:
            contagem.contar()
        return True


class ContaNaConsulta:
    """Mixin of an APIView whose first statement counts the request.

    Counts alone, when the response is finalized, a request that never
    reached that statement (bad parameters, an id out of range): the limit
    must hold for every request, not only the ones that hit the database.
    """

    conta_na_consulta = True

    def check_throttles(self, request: Request) -> None:
        """No throttle classes: the count rides on the view's statement (the
        DRF throttle machinery, instances per request, bought nothing)."""
        contagem = _contagem_nova(request)
        if contagem is not None:
            setattr(request, _ATRIBUTO, contagem)

    def finalize_response(
        self, request: Request, response: Any, *args: Any, **kwargs: Any
    ) -> Any:
        contagem = contagem_do_pedido(request)
        if contagem is not None:
            try:
                contagem.contar()
            except LimiteExcedido as exc:
                response = self.handle_exception(exc)  # type: ignore[attr-defined]
        return super().finalize_response(  # type: ignore[misc]
            request, response, *args, **kwargs
        )
