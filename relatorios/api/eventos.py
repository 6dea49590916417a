"""The event streams (Server-Sent Events), served by the ASGI process only.

GET /relatorios/jobs/<id>/eventos  one job: the status endpoint's JSON, one
                                   event per change, ending after `pronto`
                                   or `falhou`.
GET /relatorios/eventos            the tenant's jobs, alerts and scheduled
                                   deliveries, in the webhooks' envelope.

Django async views (config/asgi.py): a stream waits on its queue in
`eventos.central`, holding no thread and no database connection; it touches
the database only to start, to catch up, and to read a `pronto` job's result
(one read per event and process, shared by all of that job's streams).

Authentication is the API's: `Authorization: Token <key>` (the API's cached
token check, `TokenComCache`), else the pages' session. Everything that can
refuse a stream (401, 403, 400 for a bad Last-Event-ID, 404 for another
tenant's job, 429 past the caps, 503 while a new process cannot reach the
database) is answered before the stream opens, as JSON `{"erro": ...}`, like
any API error. What authenticated a stream is kept with it and checked
again while it is open (eventos/credenciais.py). docs/api.md has the protocol.

Positions: a stream reads the table up to its process's `posicao()` (read
as it registers, with no `await` between) and takes the rest from its queue,
which gets exactly the events after it (eventos/leitura.py says why the
table alone is not enough).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django.views.decorators.http import require_GET
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer

from relatorios.api import limites
from relatorios.api.autenticacao import TokenComCache
from relatorios.api.jobs import local_do_job, representar
from relatorios.api.permissoes import UsuarioDeTenant
from relatorios.eventos import leitura, no_banco
from relatorios.eventos.central import (
    BATIMENTO,
    ENCERRAR,
    RESSINCRONIZAR,
    Assinatura,
    Indisponivel,
    Lotado,
    central,
)
from relatorios.eventos.credenciais import Credencial, digest_da_senha
from relatorios.eventos.leitura import Aviso
from relatorios.eventos.no_banco import SemBanco
from relatorios.jobs import consultas, parcial
from relatorios.models import EstadoDoJob
from relatorios.models.jobs import TERMINAIS

CABECALHO_DO_ULTIMO = "HTTP_LAST_EVENT_ID"
# A comment line: proxies see traffic, clients see nothing.
BATIDA = b":\n\n"

_renderizador = JSONRenderer()


class Recusa(Exception):
    """A stream refused before it opens: status and message."""

    def __init__(self, status: int, mensagem: str, **extras: str) -> None:
        super().__init__(mensagem)
        self.status = status
        self.mensagem = mensagem
        self.extras = extras

    def resposta(self) -> JsonResponse:
        corpo = {"erro": self.mensagem}
        campo = self.extras.get("campo")
        if campo:
            corpo["campo"] = campo
        resposta = JsonResponse(corpo, status=self.status)
        for nome in ("Retry-After", "WWW-Authenticate"):
            if nome in self.extras:
                resposta[nome] = self.extras[nome]
        return resposta


# --- the views --------------------------------------------------------------------


@require_GET
async def eventos_do_job(request: HttpRequest, job_id: int) -> HttpResponseBase:
    try:
        usuario, credencial = await _usuario(request)
        await _contar(usuario)
        apos = _ultimo_id(request)
        assinatura, ate = await _assinar(usuario, credencial, job_id=job_id)
    except Recusa as recusa:
        return recusa.resposta()
    try:
        inicio = await no_banco.ler(
            _inicio_do_job,
            tenant_id=assinatura.tenant_id,
            job_id=job_id,
            apos=apos,
            ate=ate,
        )
    except Http404:
        central().cancelar(assinatura)
        return Recusa(404, "não encontrado").resposta()
    except SemBanco as erro:
        central().cancelar(assinatura)
        return _sem_banco(erro).resposta()
    except BaseException:
        central().cancelar(assinatura)
        raise
    if inicio is None:
        # The client saw the job's final event: 204 tells EventSource to stop.
        central().cancelar(assinatura)
        return HttpResponse(status=204)
    quadros, posicao, fim = inicio
    return _resposta(
        assinatura, quadros, posicao=posicao, fim=fim, formatar=_quadro_do_job
    )


@require_GET
async def eventos_do_tenant(request: HttpRequest) -> HttpResponseBase:
    try:
        usuario, credencial = await _usuario(request)
        await _contar(usuario)
        apos = _ultimo_id(request)
        assinatura, ate = await _assinar(usuario, credencial, job_id=None)
    except Recusa as recusa:
        return recusa.resposta()
    try:
        retomada = await no_banco.ler(
            leitura.retomar, tenant_id=assinatura.tenant_id, apos=apos, ate=ate
        )
        quadros = []
        if apos is not None and not retomada.conhecido:
            quadros.append(_lacuna(apos))
        for aviso in retomada.eventos:
            quadro, _ = await _quadro_do_tenant(aviso)
            quadros.append(quadro)
    except SemBanco as erro:
        central().cancelar(assinatura)
        return _sem_banco(erro).resposta()
    except BaseException:
        central().cancelar(assinatura)
        raise
    if not retomada.eventos:
        # The client's position: the tenant's newest event it need not get
        # (the id it resumes from is then one of its own, `conhecido`).
        mostrada = retomada.ultimo if apos is None else apos
        quadros.append(f"id: {mostrada}\n\n".encode())
    if len(retomada.eventos) >= leitura.LOTE:
        posicao = retomada.eventos[-1].id
        assinatura.por(RESSINCRONIZAR)
    else:
        # Read up to `ate`: the queue has what follows.
        posicao = max(ate, apos or 0)
    return _resposta(
        assinatura, quadros, posicao=posicao, fim=False, formatar=_quadro_do_tenant
    )


def fora_do_processo_de_eventos(request: HttpRequest, **kwargs: Any) -> JsonResponse:
    """The stream paths at the web server (no events process behind this
    address): the API's JSON 404, whatever the method or Accept, not the
    submit catch-all's answer for a type named `eventos`."""
    return Recusa(404, "não encontrado").resposta()


def nao_encontrado(request: HttpRequest, exception: Exception) -> JsonResponse:
    return Recusa(404, "não encontrado").resposta()


def erro_do_servidor(request: HttpRequest) -> JsonResponse:
    return Recusa(500, "erro interno do servidor").resposta()


# --- before the stream --------------------------------------------------------------


async def _usuario(request: HttpRequest) -> tuple[Any, Credencial]:
    """The API's token, else the pages' session; a user of a tenant, and
    what to check again while its stream is open."""
    try:
        # DRF's authenticate reads only request.META, which a Django request has.
        par = await no_banco.ler(TokenComCache().authenticate, request)
    except exceptions.AuthenticationFailed:
        raise Recusa(
            401, "token inválido ou usuário inativo", **{"WWW-Authenticate": "Token"}
        ) from None
    except SemBanco as erro:
        raise _sem_banco(erro) from None
    if par is not None:
        usuario, credencial = par[0], Credencial(token=par[1], sessao=None, senha=None)
    else:
        try:
            usuario = await no_banco.ler(_usuario_da_sessao, request)
        except SemBanco as erro:
            raise _sem_banco(erro) from None
        credencial = Credencial(
            token=None,
            sessao=request.session.session_key,
            senha=digest_da_senha(getattr(usuario, "password", "") or ""),
        )
    if not usuario.is_authenticated:
        raise Recusa(
            401,
            "credenciais ausentes: envie 'Authorization: Token <chave>'",
            **{"WWW-Authenticate": "Token"},
        )
    if getattr(usuario, "tenant_id", None) is None:
        raise Recusa(403, UsuarioDeTenant.message)
    return usuario, credencial


async def _contar(usuario: Any) -> None:
    """A stream's open is one of its user's API requests (the API's limit)."""
    try:
        await no_banco.ler(limites.contar_para, usuario.pk)
    except limites.LimiteExcedido as excedido:
        raise Recusa(
            429, str(excedido.detail), **{"Retry-After": str(excedido.wait)}
        ) from None
    except SemBanco as erro:
        raise _sem_banco(erro) from None


def _sem_banco(erro: SemBanco) -> Recusa:
    return Recusa(
        503, str(erro), **{"Retry-After": str(int(settings.RELATORIOS_EVENTOS_RETRY_S))}
    )


def _usuario_da_sessao(request: HttpRequest) -> Any:
    """The pages' logged-in user, read as Django's session and authentication
    middleware would (the events process runs none: config/settings_eventos.py)."""
    motor = import_module(settings.SESSION_ENGINE)
    request.session = motor.SessionStore(
        request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    )
    return get_user(request)


def _ultimo_id(request: HttpRequest) -> int | None:
    bruto = request.META.get(CABECALHO_DO_ULTIMO, "").strip()
    if not bruto:
        return None
    # ASCII digits only: "²" is a digit to str.isdigit, not to int().
    if not (bruto.isascii() and bruto.isdigit()) or len(bruto) > 19:
        raise Recusa(
            400,
            "Last-Event-ID deve ser o id de um evento recebido (um inteiro)",
            campo="Last-Event-ID",
        )
    return int(bruto)


async def _assinar(
    usuario: Any, credencial: Credencial, *, job_id: int | None
) -> tuple[Assinatura, int]:
    """The stream's registration and its process's position then."""
    fanout = central()
    try:
        await fanout.pronta()
        assinatura = fanout.assinar(
            tenant_id=int(usuario.tenant_id),
            usuario_id=usuario.pk,
            job_id=job_id,
            credencial=credencial,
        )
        return assinatura, fanout.posicao()
    except Indisponivel as indisponivel:
        raise Recusa(
            503,
            str(indisponivel),
            **{"Retry-After": str(int(settings.RELATORIOS_EVENTOS_RETRY_S))},
        ) from None
    except Lotado as lotado:
        raise Recusa(
            429,
            lotado.mensagem,
            **{"Retry-After": str(settings.RELATORIOS_RETRY_AFTER_429_S)},
        ) from None


def _inicio_do_job(
    *, tenant_id: int, job_id: int, apos: int | None, ate: int
) -> tuple[list[bytes], int, bool] | None:
    """The first frames of a job's stream, its position, and whether it ends
    there; None when the client already has the job's final event.

    The state and its position are read by one statement (one snapshot). The
    position is the newest of the tenant's events up to `ate` (the process's
    position, read before: every event of the job up to it committed before
    this snapshot) and of the job's own events after `ate` that the snapshot
    sees (a job's events follow its commits): every event of the job after
    it is a change the state does not show, and none before it is.
    """
    linha = consultas.ler_contando(
        None,
        colunas=consultas.COLUNAS_ESTADO + ", greatest("
        "  (SELECT max(e.id) FROM relatorio_eventos e"
        "    WHERE e.tenant_id = relatorio_jobs.tenant_id AND e.id <= %s),"
        "  (SELECT max(e.id) FROM relatorio_eventos e"
        "    WHERE e.tenant_id = relatorio_jobs.tenant_id AND e.id > %s"
        "      AND e.job_id = relatorio_jobs.id))",
        juncao="relatorio_jobs ON relatorio_jobs.id = %s AND tenant_id = %s",
        parametros=[ate, ate, job_id, tenant_id],
    )
    if linha[0] is None:
        raise Http404("job não encontrado")
    *colunas, ultimo = linha
    estado = consultas.com_parcial(
        consultas.JobEstado.da_linha(colunas), tenant_id=tenant_id
    )
    terminal = estado.status in TERMINAIS
    if apos is not None:
        # Unbounded: the job's own events follow its commits, and the state
        # read above may already show a final event past `ate`.
        retomada = leitura.retomar(
            tenant_id=tenant_id, apos=apos, ate=None, job_id=job_id
        )
        if retomada.conhecido:
            quadros: list[bytes] = []
            for aviso in retomada.eventos:
                dados = aviso.dados
                quadros.append(_quadro_de_estado(aviso.id, _estado(dados, estado)))
                if dados.get("status") in TERMINAIS:
                    return quadros, aviso.id, True
            if not quadros and terminal:
                return None
            posicao = retomada.eventos[-1].id if retomada.eventos else apos
            return quadros, posicao, False
    # No position, or one past the retention: the current state stands for
    # what was missed.
    return [_quadro_de_estado(ultimo or 0, estado)], ultimo or 0, terminal


def _resposta(
    assinatura: Assinatura,
    quadros: list[bytes],
    *,
    posicao: int,
    fim: bool,
    formatar: Callable[[Aviso], Awaitable[tuple[bytes, bool]]],
) -> StreamingHttpResponse:
    retry = int(settings.RELATORIOS_EVENTOS_RETRY_S * 1000)
    abertura = f"retry: {retry}\n\n".encode() + b"".join(quadros)
    fluxo = _fluxo(assinatura, abertura, posicao=posicao, fim=fim, formatar=formatar)
    resposta = StreamingHttpResponse(fluxo, content_type="text/event-stream")
    resposta["Cache-Control"] = "no-store"
    # nginx: pass each event on at once (docs/implantacao.md, the proxy).
    resposta["X-Accel-Buffering"] = "no"
    # A response dropped before its first byte (the client left at once)
    # never starts the generator, whose `finally` would free the slot.
    weakref.finalize(resposta, central().cancelar, assinatura)
    return resposta


# --- the stream -------------------------------------------------------------------


async def _fluxo(
    assinatura: Assinatura,
    abertura: bytes,
    *,
    posicao: int,
    fim: bool,
    formatar: Callable[[Aviso], Awaitable[tuple[bytes, bool]]],
) -> AsyncIterator[bytes]:
    """Waits on the stream's queue; ends after a job's final state, at the
    process's shutdown, at its maximum life, when its credential is revoked
    (nothing more is sent then), or when the client leaves (Django cancels
    it)."""
    try:
        yield abertura
        if fim:
            return
        async for quadro in _seguir(assinatura, posicao, formatar):
            yield quadro
    except SemBanco:
        # A catch-up or a result the database did not give in time: the
        # stream ends, and the client resumes from its last id.
        return
    finally:
        central().cancelar(assinatura)


async def _seguir(
    assinatura: Assinatura,
    posicao: int,
    formatar: Callable[[Aviso], Awaitable[tuple[bytes, bool]]],
) -> AsyncIterator[bytes]:
    """The stream's frames after its opening, until it ends."""
    while True:
        item = await assinatura.proximo()
        if item is BATIMENTO:
            yield BATIDA
        elif item is ENCERRAR:
            return
        elif item is RESSINCRONIZAR:
            async for quadro, lido, terminou in _recuperar(
                assinatura, posicao, formatar
            ):
                if assinatura.revogada:
                    return
                posicao = lido
                yield quadro
                if terminou:
                    return
        elif item.id > posicao:
            quadro, terminou = await formatar(item)
            # Revoked while it was formatted (a `pronto`'s result read).
            if assinatura.revogada:
                return
            posicao = item.id
            yield quadro
            if terminou:
                return


async def _recuperar(
    assinatura: Assinatura,
    posicao: int,
    formatar: Callable[[Aviso], Awaitable[tuple[bytes, bool]]],
) -> AsyncIterator[tuple[bytes, int, bool]]:
    """Catch up from the table after `posicao` (a client too slow for its
    queue, or a start with more to send than one read)."""
    while True:
        assinatura.retomada()
        ate = central().posicao()
        avisos = await no_banco.ler(
            leitura.eventos_apos,
            tenant_id=assinatura.tenant_id,
            apos=posicao,
            ate=ate,
            job_id=assinatura.job_id,
        )
        for aviso in avisos:
            quadro, terminou = await formatar(aviso)
            posicao = aviso.id
            yield quadro, posicao, terminou
            if terminou:
                return
        # The queue holds this stream's events after `ate`, and those up to
        # it that it holds were all in this read, so are dropped as sent.
        if len(avisos) < leitura.LOTE:
            return


# --- frames -------------------------------------------------------------------------

# The rendered frame of each recent event, per shape: a job's watchers all
# get the same bytes, rendered (and a `pronto`'s result read) once.
_QUADROS_GUARDADOS = 2000
_quadros: OrderedDict[tuple[str, int], Any] = OrderedDict()


async def _guardado(
    chave: tuple[str, int], fazer: Callable[[], Awaitable[tuple[bytes, bool]]]
) -> tuple[bytes, bool]:

    futuro = _quadros.get(chave)
    if futuro is None:
        futuro = asyncio.get_running_loop().create_future()
        _quadros[chave] = futuro
        if len(_quadros) > _QUADROS_GUARDADOS:
            _quadros.popitem(last=False)
        try:
            futuro.set_result(await fazer())
        except BaseException as erro:
            _quadros.pop(chave, None)
            futuro.set_exception(erro)
            raise
    resultado: tuple[bytes, bool] = await futuro
    return resultado


async def _quadro_do_job(aviso: Aviso) -> tuple[bytes, bool]:
    async def fazer() -> tuple[bytes, bool]:
        dados = aviso.dados
        atual = None
        if dados.get("status") == EstadoDoJob.PRONTO or _com_parcial(dados):
            atual = await no_banco.ler(
                consultas.estado_do_job,
                tenant_id=aviso.tenant_id,
                job_id=int(dados["id"]),
            )
        quadro = _quadro_de_estado(aviso.id, _estado(dados, atual))
        return quadro, dados.get("status") in TERMINAIS

    return await _guardado(("job", aviso.id), fazer)


async def _quadro_do_tenant(aviso: Aviso) -> tuple[bytes, bool]:
    async def fazer() -> tuple[bytes, bool]:
        dados = aviso.dados
        if aviso.tipo.startswith("job."):
            dados = _dados_do_job_no_tenant(dados)
        envelope = {"type": aviso.tipo, "timestamp": aviso.em, "data": dados}
        texto = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
        return (
            f"id: {aviso.id}\nevent: {aviso.tipo}\ndata: {texto}\n\n".encode(),
            False,
        )

    return await _guardado(("tenant", aviso.id), fazer)


def _dados_do_job_no_tenant(dados: dict[str, Any]) -> dict[str, Any]:
    """A job's event in the tenant's stream: the webhooks' `data` of
    job.pronto/job.falhou, with the progress, for every status."""
    saida = {
        "id": dados.get("id"),
        "tipo": dados.get("tipo"),
        "status": dados.get("status"),
        "progresso": dados.get("progresso"),
        "url": settings.RELATORIOS_URL_BASE + local_do_job(int(dados.get("id") or 0)),
        "concluido_em": dados.get("concluido_em"),
    }
    if dados.get("status") == EstadoDoJob.FALHOU:
        saida["erro"] = dados.get("erro")
    return saida


def _lacuna(apos: int) -> bytes:
    texto = json.dumps(
        {
            "ultimo_id": apos,
            "erro": (
                "o evento informado não está mais disponível: eventos podem ter "
                "sido perdidos; releia o estado pela API"
            ),
        },
        ensure_ascii=False,
    )
    return f"event: lacuna\ndata: {texto}\n\n".encode()


def _com_parcial(dados: dict[str, Any]) -> bool:
    """A running job's progress past 0: a chunk finished, and its frame
    carries the partial result as the status endpoint shows it."""
    return (
        dados.get("status") == EstadoDoJob.EXECUTANDO
        and int(dados.get("progresso") or 0) > 0
        and parcial.ligado()
    )


def _instante(valor: Any) -> datetime | None:
    return None if valor is None else datetime.fromisoformat(valor)


def _estado(dados: dict[str, Any], atual: consultas.JobEstado | None) -> Any:
    """The job as the event saw it; a `pronto`'s result from its current row
    when that is still the same end (else null: the job started over); a
    running job's partial result from its current row when it still runs
    the same attempt (it may have finished more chunks since the event:
    never fewer, and never another attempt's)."""
    concluido_em = _instante(dados.get("concluido_em"))
    resultado = None
    if (
        atual is not None
        and atual.status == EstadoDoJob.PRONTO
        and atual.concluido_em == concluido_em
    ):
        resultado = atual.resultado
    resultado_parcial = None
    if (
        atual is not None
        and atual.status == EstadoDoJob.EXECUTANDO == dados.get("status")
        and atual.tentativas == dados.get("tentativas")
    ):
        resultado_parcial = atual.parcial
    return consultas.JobEstado(
        id=int(dados["id"]),
        status=str(dados["status"]),
        progresso=int(dados.get("progresso") or 0),
        criado_em=_instante(dados.get("criado_em")),  # type: ignore[arg-type]
        erro=dados.get("erro"),
        resultado=resultado,
        concluido_em=concluido_em,
        expira_em=_instante(dados.get("expira_em")),
        tentativas=int(dados.get("tentativas") or 0),
        proxima_tentativa_em=_instante(dados.get("proxima_tentativa_em")),
        parcial=resultado_parcial,
    )


def _quadro_de_estado(evento_id: int, estado: Any) -> bytes:
    """One job-stream frame: the status endpoint's JSON, as that endpoint renders it."""
    corpo, _ = representar(estado)
    return b"id: %d\ndata: %s\n\n" % (evento_id, _renderizador.render(corpo))
