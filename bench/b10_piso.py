"""B10 "piso" (floor): the same status read at each layer of the stack.

Issue 27's floor study, as a scenario of the bench, so the floor is
re-measured on every machine and beside every change. One job of one tenant
is read, in-process (no HTTP server), at six layers:

1. `wsgi+psycopg`: a bare WSGI callable, one psycopg connection, one
   prepared statement, json.dumps;
2. `django, no middleware`: Django's WSGI handler with `MIDDLEWARE = []`
   and a function view running the same SQL through Django's connection;
3. `+ API chain`: the same view behind the API's chain (config.wsgi's
   handler, a token call under /relatorios/: `MIDDLEWARE` without the
   browser's middlewares);
4. `+ full chain`: the same view behind the whole `MIDDLEWARE`;
5. `minimal DRF`: an `APIView` with only DRF's JSON renderer and parser, the
   project's cached token authentication, no throttles, no middleware;
6. `ours`: `GET /relatorios/jobs/<id>` through config.wsgi's handler with
   the real settings (token, API chain, DRF view, the limit's UPSERT).

Each is CPU time (this process) per request, rounds interleaved so every
layer sees the same neighbours, the median of three rounds; `vs ours` is
the ratio to layer 6. It runs in a child with prepared statements on, as in
the web's workers (so layer 1's prepared statement is not an advantage).

    .venv/bin/python -m bench.b10_piso     # alone, with a tenant of its own
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.contexto import Contexto, linha, nota

SQL = (
    "SELECT id, status, progresso, tentativas, proxima_tentativa_em"
    " FROM relatorio_jobs WHERE id = %s AND tenant_id = %s"
)
CAMPOS = ("id", "status", "progresso", "tentativas", "proxima_tentativa_em")
CAMADAS = (
    "wsgi+psycopg",
    "django, no middleware",
    "+ API chain",
    "+ full chain",
    "minimal DRF",
    "ours",
)
URLCONF = "bench.b10_piso"


def executar(ctx: Contexto) -> None:
    tenant = ctx.tenants()[0]
    for texto in _rodar_filho(tenant.token, 300 if ctx.rapido else 2000):
        print(texto, flush=True)
    nota(
        "B10: CPU per request of the same status read at each layer, in-process,"
        " rounds interleaved, median of 3 (bench/b10_piso.py); vs ours = layer /"
        " our real endpoint"
    )


def _rodar_filho(token: str, n: int) -> list[str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DB_PREPARE_THRESHOLD": os.environ.get("DB_PREPARE_THRESHOLD", "5"),
        "BENCH_PISO_TOKEN": token,
    }
    raiz = Path(__file__).resolve().parent.parent
    feito = subprocess.run(
        [sys.executable, "-m", "bench.b10_piso", "--filho", f"--n={n}"],
        cwd=raiz,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if feito.returncode != 0:
        raise RuntimeError(f"B10 child failed:\n{feito.stderr[-3000:]}")
    return [t for t in feito.stdout.splitlines() if t.startswith(("B10", "#"))]


# --- the child -------------------------------------------------------------------

urlpatterns: list[Any] = []  # filled in the child (this module is its URLconf)
_estado: dict[str, Any] = {}


def _funcao(request: Any, job_id: int) -> Any:
    from django.db import connection
    from django.http import JsonResponse

    with connection.cursor() as cursor:
        cursor.execute(SQL, [job_id, _estado["tenant_id"]])
        achada = cursor.fetchone()
    if achada is None:
        return JsonResponse({"erro": "não encontrado"}, status=404)
    return JsonResponse(dict(zip(CAMPOS, achada, strict=True)))


def _vista_drf() -> Any:
    from django.db import connection
    from rest_framework.parsers import JSONParser
    from rest_framework.permissions import IsAuthenticated
    from rest_framework.renderers import JSONRenderer
    from rest_framework.request import Request
    from rest_framework.response import Response
    from rest_framework.views import APIView

    from relatorios.api.autenticacao import TokenComCache

    class Minima(APIView):
        authentication_classes = [TokenComCache]
        permission_classes = [IsAuthenticated]
        throttle_classes: list[Any] = []
        renderer_classes = [JSONRenderer]
        parser_classes = [JSONParser]

        def get(self, request: Request, job_id: int) -> Response:
            with connection.cursor() as cursor:
                usuario: Any = request.user
                cursor.execute(SQL, [job_id, usuario.tenant_id])
                achada = cursor.fetchone()
            return Response(dict(zip(CAMPOS, achada, strict=True)))

    return Minima.as_view()


def _handler(middleware: list[str]) -> Any:
    """Django's WSGI handler with `middleware` and this module's URLconf."""
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    class Handler(WSGIHandler):
        def __init__(self) -> None:
            completa = settings.MIDDLEWARE
            settings.MIDDLEWARE = middleware
            try:
                super().__init__()
            finally:
                settings.MIDDLEWARE = completa

        def get_response(self, request: Any) -> Any:
            request.urlconf = URLCONF
            return super().get_response(request)

    return Handler()


def _handler_da_api() -> Any:
    """config.wsgi's handler with this module's URLconf: a token call under
    /relatorios/ takes the API's chain."""
    from relatorios.api.cadeia import HandlerWsgi

    class Handler(HandlerWsgi):
        def get_response(self, request: Any) -> Any:
            request.urlconf = URLCONF
            return super().get_response(request)

    return Handler()


class _Corpo(list[bytes]):
    """A WSGI body with the close() a server calls."""

    def close(self) -> None:
        pass


def _bruto(dsn: str, tenant_id: int) -> Callable[..., Any]:
    import psycopg

    conexao = psycopg.connect(dsn, autocommit=True)

    def aplicacao(environ: dict[str, Any], start_response: Any) -> _Corpo:
        job_id = int(environ["PATH_INFO"].rsplit("/", 1)[1])
        achada: Any = conexao.execute(SQL, [job_id, tenant_id], prepare=True).fetchone()
        corpo = json.dumps(dict(zip(CAMPOS, achada, strict=True)), default=str)
        dados = corpo.encode()
        start_response(
            "200 OK",
            [("Content-Type", "application/json"), ("Content-Length", str(len(dados)))],
        )
        return _Corpo([dados])

    return aplicacao


def _filho(n: int) -> None:
    import django

    django.setup()
    import logging

    logging.getLogger().setLevel(logging.WARNING)
    from django.conf import settings
    from django.urls import path

    from bench.chamada import chamar
    from relatorios.api.cadeia import HandlerWsgi, sinais_do_servidor
    from relatorios.models import RelatorioJob

    token = os.environ["BENCH_PISO_TOKEN"]
    nosso = HandlerWsgi()
    sinais_do_servidor()  # as config/wsgi.py
    filtro = {"inicio": "2034-01-01", "fim": "2034-01-31", "agrupar": "dia"}
    chamar(nosso, "POST", "/relatorios/vendas", token, filtro)
    job = RelatorioJob.objects.order_by("-id").only("id", "tenant_id").first()
    assert job is not None
    # Run as __main__: the URLconf Django imports is the module by name.
    from django.db import connection

    from bench import b10_piso as modulo

    modulo._estado["tenant_id"] = job.tenant_id
    modulo.urlpatterns[:] = [
        path("piso/jobs/<int:job_id>", modulo._funcao),
        path("relatorios/piso/jobs/<int:job_id>", modulo._funcao),
        path("piso/drf/jobs/<int:job_id>", _vista_drf()),
    ]

    connection.ensure_connection()
    bruto = _bruto(connection.connection.info.dsn, job.tenant_id)

    camadas: dict[str, Callable[[], int]] = {}
    vazio, api, completo = (
        _handler([]),
        _handler_da_api(),
        _handler(settings.MIDDLEWARE),
    )
    funcao = f"/piso/jobs/{job.id}"
    camadas["wsgi+psycopg"] = lambda: chamar(bruto, "GET", funcao, token, None)
    camadas["django, no middleware"] = lambda: chamar(vazio, "GET", funcao, token, None)
    na_api = f"/relatorios/piso/jobs/{job.id}"
    camadas["+ API chain"] = lambda: chamar(api, "GET", na_api, token, None)
    camadas["+ full chain"] = lambda: chamar(completo, "GET", funcao, token, None)
    drf = f"/piso/drf/jobs/{job.id}"
    camadas["minimal DRF"] = lambda: chamar(vazio, "GET", drf, token, None)
    real = f"/relatorios/jobs/{job.id}"
    camadas["ours"] = lambda: chamar(nosso, "GET", real, token, None)

    for nome, fazer in camadas.items():
        for _ in range(100):
            status = fazer()
            if status != 200:
                raise RuntimeError(f"B10 {nome}: HTTP {status}")
    rodadas: dict[str, list[float]] = {nome: [] for nome in camadas}
    for _ in range(3):
        for nome, fazer in camadas.items():
            t0 = time.process_time()
            for _ in range(n):
                fazer()
            rodadas[nome].append(1000 * (time.process_time() - t0) / n)
    medianas = {nome: statistics.median(v) for nome, v in rodadas.items()}
    for nome in CAMADAS:
        ms = medianas[nome]
        faixa = ", ".join(f"{v:.3f}" for v in rodadas[nome])
        linha(
            f"B10 {nome}",
            f"{ms:.3f} ms/req python ({faixa}); {ms / medianas['ours']:.2f}x ours",
        )
    linha(
        "B10 ours vs DRF floor",
        f"{medianas['ours'] / medianas['minimal DRF']:.2f}x (target <= 1.1x)",
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.b10_piso", description=__doc__)
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--filho", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if args.filho:
        _filho(args.n)
        return 0
    os.environ.setdefault("RELATORIOS_API_LIMITE", str(10**9))
    from bench.instrucoes import _token_novo

    for texto in _rodar_filho(_token_novo(), args.n):
        print(texto)
    return 0


if __name__ == "__main__":
    sys.exit(main())
