"""The load: client programs over real HTTP, each a thread of a registered driver.

Every call is recorded (`Chamada`: when it left, when it came back, which
web server, the status or why there was none); what the invariants need of
the answers is kept too: which job each logical request was answered with
(dedup), whether another tenant's job was ever shown (isolation), the
schedules' pauses and resumes with the window in which each took effect.

A new driver is a function and a line in `CARGAS` (a later channel, a
download budget, an SSE client).
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlsplit

from tests import sse
from tests.caos import erp
from tests.caos.implantacao import Implantacao, TenantDoSoak

TIMEOUT_S = 30.0
LOJAS = ("L001", "L002", "L003", "L004")


@dataclass(frozen=True)
class Chamada:
    carga: str
    web: int
    metodo: str
    caminho: str
    inicio: float
    fim: float
    status: int | None  # None: no answer (refused, reset, timed out)
    erro: str = ""


@dataclass(frozen=True)
class Pedido:
    """A logical request: what a manager means, whatever spelling is sent."""

    tenant: int
    tipo: str
    inicio: str
    fim: str
    agrupar: str
    lojas: tuple[str, ...]


@dataclass
class EventoDeAgendamento:
    """A pause, resume or delete: it took effect somewhere in [inicio, fim]."""

    acao: str
    inicio: float
    fim: float
    ok: bool


@dataclass
class AgendamentoDoSoak:
    id: int
    tenant: TenantDoSoak
    passo_s: int
    prazo_s: float
    criado: float  # ativo_desde, from the database
    eventos: list[EventoDeAgendamento] = field(default_factory=list)
    ativo: bool = True
    excluido: bool = False


@dataclass
class FluxoDoSoak:
    """One tenant stream (`GET /relatorios/eventos`) as the listener held it:
    opened fresh (`retomado_de` None) or resuming after the last id the
    previous one saw, until it ended or the load did."""

    tenant: int
    aberto: float
    retomado_de: str | None
    fluxo: sse.Fluxo | None = None
    # When its headers came back: the server has fixed where it starts.
    respondido: float | None = None
    fechado: float | None = None


@dataclass
class Soak:
    """What the drivers share: the deployment and what they saw."""

    impl: Implantacao
    semente: int
    chamadas: list[Chamada] = field(default_factory=list)
    # Logical request -> job ids it was answered with.
    respostas: dict[Pedido, set[int]] = field(default_factory=dict)
    # Jobs each tenant knows of; those seen pronto (for downloads).
    jobs: dict[int, list[int]] = field(default_factory=dict)
    prontos: dict[int, list[int]] = field(default_factory=dict)
    # Another tenant's job answered with anything but 404.
    vazamentos: list[str] = field(default_factory=list)
    agendamentos: list[AgendamentoDoSoak] = field(default_factory=list)
    # Signed download links found in delivered webhooks, already fetched.
    links_vistos: set[str] = field(default_factory=set)
    fluxos: list[FluxoDoSoak] = field(default_factory=list)
    # The ERP's writers and what they wrote (tests/caos/erp.py).
    erp: erp.RegistroDoErp = field(default_factory=erp.RegistroDoErp)
    trava: threading.Lock = field(default_factory=threading.Lock)

    def chamar(
        self,
        carga: str,
        metodo: str,
        caminho: str,
        *,
        sorte: random.Random,
        token: str | None = None,
        corpo: dict[str, Any] | None = None,
    ) -> tuple[int | None, Any]:
        """One request to one of the web servers (as a load balancer would
        pick), recorded; returns the status and the JSON body (or None)."""
        webs = self.impl.webs
        web = webs[sorte.randrange(len(webs))]
        dados = None if corpo is None else json.dumps(corpo).encode()
        pedido = urllib.request.Request(web.url + caminho, data=dados, method=metodo)
        if token:
            pedido.add_header("Authorization", f"Token {token}")
        if dados is not None:
            pedido.add_header("Content-Type", "application/json")
        inicio = time.time()
        status: int | None = None
        conteudo: bytes = b""
        erro = ""
        try:
            with urllib.request.urlopen(pedido, timeout=TIMEOUT_S) as resposta:
                status, conteudo = resposta.status, resposta.read()
        except urllib.error.HTTPError as falha:
            status = falha.code
            try:
                conteudo = falha.read()
            except OSError:
                conteudo = b""
        except (OSError, ValueError, http.client.HTTPException) as falha:
            # URLError, reset, timeout; a body cut short (IncompleteRead)
            erro = f"{type(falha).__name__}: {falha}"[:200]
        self.chamadas.append(
            Chamada(
                carga, web.indice, metodo, caminho, inicio, time.time(), status, erro
            )
        )
        try:
            return status, json.loads(conteudo) if conteudo else None
        except ValueError:
            return status, None


# --- the drivers -------------------------------------------------------------------


def _pedidos_do_tenant(tenant: TenantDoSoak, sorte: random.Random) -> list[Pedido]:
    """A tenant's repertoire: the heavy ones ask for many different reports
    (and live at their pending cap), the others for a few, over and over."""
    quantos = 40 if tenant.pesado else 8
    pedidos = []
    for _ in range(quantos):
        tipo = sorte.choices(
            ["teste_razao", "vendas", "teste_quebrado"], weights=[85, 10, 5]
        )[0]
        mes = sorte.randint(1, 5)
        meses = sorte.randint(1, 3)
        inicio = date(2026, mes, 1)
        fim = (
            date(2026, mes + meses, 1) if mes + meses <= 12 else date(2027, 1, 1)
        ) - (timedelta(days=1))
        lojas = tuple(sorted(sorte.sample(LOJAS, sorte.randint(1, 3))))
        pedidos.append(
            Pedido(
                tenant.id,
                tipo,
                inicio.isoformat(),
                fim.isoformat(),
                sorte.choice(["dia", "mes"]),
                lojas,
            )
        )
    return pedidos


def variante(pedido: Pedido, sorte: random.Random) -> dict[str, Any]:
    """One spelling of the request: stores shuffled and repeated, dates as
    ISO datetimes in UTC, the default `agrupar` left out. All must land on
    the same job."""
    lojas = list(pedido.lojas) + sorte.sample(list(pedido.lojas), 1)
    sorte.shuffle(lojas)
    corpo: dict[str, Any] = {
        "inicio": pedido.inicio
        if sorte.random() < 0.5
        else f"{pedido.inicio}T00:00:00.000Z",
        "fim": pedido.fim if sorte.random() < 0.5 else f"{pedido.fim}T12:00:00Z",
        "lojas": lojas,
    }
    if pedido.agrupar != "dia" or sorte.random() < 0.5:
        corpo["agrupar"] = pedido.agrupar
    return corpo


def submeter(soak: Soak, sorte: random.Random, parar: threading.Event) -> None:
    tenants = soak.impl.tenants
    pesos = [4 if t.pesado else 1 for t in tenants]
    repertorio = {t.id: _pedidos_do_tenant(t, sorte) for t in tenants}
    while not parar.wait(sorte.uniform(0.05, 0.25)):
        tenant = sorte.choices(tenants, weights=pesos)[0]
        pedido = sorte.choice(repertorio[tenant.id])
        corpo = variante(pedido, sorte)
        usuario = sorte.randrange(len(tenant.tokens))
        if sorte.random() < 0.2:
            corpo["notificar_email"] = True
        status, resposta = soak.chamar(
            "submeter",
            "POST",
            f"/relatorios/{pedido.tipo}",
            sorte=sorte,
            token=tenant.tokens[usuario],
            corpo=corpo,
        )
        if status in (200, 202) and isinstance(resposta, dict):
            with soak.trava:
                soak.respostas.setdefault(pedido, set()).add(int(resposta["id"]))
                soak.jobs.setdefault(tenant.id, []).append(int(resposta["id"]))


def consultar(soak: Soak, sorte: random.Random, parar: threading.Event) -> None:
    tenants = soak.impl.tenants
    while not parar.wait(sorte.uniform(0.05, 0.2)):
        tenant = sorte.choice(tenants)
        with soak.trava:
            conhecidos = list(soak.jobs.get(tenant.id, [])[-200:])
        if not conhecidos:
            continue
        job_id = sorte.choice(conhecidos)
        # One poll in twenty is another tenant's: it must be a 404.
        intruso = sorte.random() < 0.05
        outro = sorte.choice([t for t in tenants if t.id != tenant.id])
        quem = outro if intruso else tenant
        status, resposta = soak.chamar(
            "consultar",
            "GET",
            f"/relatorios/jobs/{job_id}",
            sorte=sorte,
            token=quem.tokens[0],
        )
        if intruso and status is not None and status != 404 and status < 500:
            soak.vazamentos.append(f"job {job_id} do tenant {tenant.id}: {status}")
        elif (
            not intruso
            and status == 200
            and isinstance(resposta, dict)
            and resposta.get("status") == "pronto"
        ):
            with soak.trava:
                soak.prontos.setdefault(tenant.id, []).append(job_id)


def baixar(soak: Soak, sorte: random.Random, parar: threading.Event) -> None:
    """CSV and .xlsx of finished jobs, and the signed links of delivered
    scheduled reports (from the webhooks received)."""
    tenants = soak.impl.tenants
    while not parar.wait(sorte.uniform(0.3, 0.8)):
        ganchos = soak.impl.ganchos
        links = []
        if ganchos is not None and sorte.random() < 0.3:
            # Absolute (RELATORIOS_URL_BASE): sent to our own servers by path.
            links = [
                urlsplit(p.payload["data"]["download"]["url"]).path
                for p in ganchos.pedidos[-50:]
                if p.tipo == "agendamento.entregue"
            ]
        if links:
            soak.chamar("baixar", "GET", sorte.choice(links), sorte=sorte)
            continue
        tenant = sorte.choice(tenants)
        with soak.trava:
            prontos = list(soak.prontos.get(tenant.id, [])[-100:])
        if not prontos:
            continue
        formato = sorte.choice(["csv", "xlsx"])
        soak.chamar(
            "baixar",
            "GET",
            f"/relatorios/jobs/{sorte.choice(prontos)}/resultado.{formato}",
            sorte=sorte,
            token=tenant.tokens[1],
        )


def escutar(soak: Soak, sorte: random.Random, parar: threading.Event) -> None:
    """One tenant stream of live events per tenant, held open for the whole
    load; one that ends (its process killed, its connection cut) is opened
    again with the last id it saw as Last-Event-ID, as EventSource does."""
    tenants = soak.impl.tenants
    vivos: dict[int, FluxoDoSoak] = {}

    def abrir(tenant: TenantDoSoak, ultimo: str | None) -> None:
        atual = FluxoDoSoak(tenant.id, time.time(), ultimo)
        with soak.trava:
            soak.fluxos.append(atual)
        vivos[tenant.id] = atual
        try:
            atual.fluxo = sse.abrir(
                soak.impl.url_eventos + "/relatorios/eventos",
                token=tenant.tokens[0],
                ultimo=ultimo,
            )
            atual.respondido = time.time()
        except AssertionError:  # no answer in 30 s: tried again next round
            atual.fechado = time.time()

    for tenant in tenants:
        abrir(tenant, None)
    while not parar.wait(sorte.uniform(0.3, 0.7)):
        for tenant in tenants:
            atual = vivos[tenant.id]
            if atual.fluxo is not None and not atual.fluxo.terminou:
                continue
            atual.fechado = atual.fechado or time.time()
            visto = atual.fluxo.ultimo_id if atual.fluxo is not None else None
            abrir(tenant, visto or atual.retomado_de)
    for atual in vivos.values():
        if atual.fluxo is not None:
            atual.fluxo.fechar()
        atual.fechado = atual.fechado or time.time()


def agendar(soak: Soak, sorte: random.Random, parar: threading.Event) -> None:
    """Pauses, resumes and deletes over HTTP, each sent just before one of
    the schedule's firings, so that it races the clusters firing it; a
    deleted schedule is replaced by a new one."""
    while not parar.wait(sorte.uniform(0.5, 2.0)):
        with soak.trava:
            vivos = [a for a in soak.agendamentos if not a.excluido]
        if not vivos:
            continue
        agendamento = sorte.choice(vivos)
        passo = agendamento.passo_s
        # Just before the next firing: within 0.3 s of it.
        proximo = (int(time.time()) // passo + 1) * passo
        if parar.wait(max(0.0, proximo - sorte.uniform(0.0, 0.3) - time.time())):
            return
        if not agendamento.ativo:
            acao = "retomar"
        elif sorte.random() < 0.15:
            acao = "excluir"
        else:
            acao = "pausar"
        token = agendamento.tenant.tokens[0]
        inicio = time.time()
        if acao == "excluir":
            status, _ = soak.chamar(
                "agendar",
                "DELETE",
                f"/relatorios/agendamentos/{agendamento.id}",
                sorte=sorte,
                token=token,
            )
        else:
            status, _ = soak.chamar(
                "agendar",
                "POST",
                f"/relatorios/agendamentos/{agendamento.id}/{acao}",
                sorte=sorte,
                token=token,
            )
        evento = EventoDeAgendamento(
            acao, inicio, time.time(), status is not None and 200 <= status < 300
        )
        if status is None or status >= 500:
            _reconciliar(evento, agendamento)
        ok = evento.ok
        with soak.trava:
            agendamento.eventos.append(evento)
            if acao == "pausar" and ok:
                agendamento.ativo = False
            elif acao == "retomar" and ok:
                agendamento.ativo = True
            elif acao == "excluir" and ok:
                agendamento.excluido = True
                agendamento.ativo = False
        if acao == "excluir" and ok:
            novo(soak, agendamento.tenant, agendamento.passo_s, agendamento.prazo_s)


def _reconciliar(evento: EventoDeAgendamento, agendamento: AgendamentoDoSoak) -> None:
    """A request without an answer (its web worker killed) or with a 5xx may
    or may not have taken effect: the schedule's row says which. The request
    is over by now (answered, or its worker dead and its transaction ended),
    so the window closes when the row is read."""
    from relatorios.models import Agendamento

    time.sleep(0.5)
    linha = Agendamento.objects.filter(pk=agendamento.id).values(
        "ativo", "excluido_em"
    )[0]
    evento.fim = time.time()
    evento.ok = {
        "pausar": not linha["ativo"],
        "retomar": bool(linha["ativo"]),
        "excluir": linha["excluido_em"] is not None,
    }[evento.acao]


def novo(soak: Soak, tenant: TenantDoSoak, passo_s: int, prazo_s: float) -> None:
    numero = len(soak.agendamentos)
    agendamento_id, criado = soak.impl.criar_agendamento(
        tenant, passo_s=passo_s, prazo_s=prazo_s, numero=numero
    )
    with soak.trava:
        soak.agendamentos.append(
            AgendamentoDoSoak(agendamento_id, tenant, passo_s, prazo_s, criado)
        )


@dataclass(frozen=True)
class Carga:
    nome: str
    threads: int
    rodar: Callable[[Soak, random.Random, threading.Event], None]


# The registry: each driver runs in `threads` threads, each with its own
# random stream from the seed.
CARGAS = (
    Carga("submeter", 3, submeter),
    Carga("consultar", 2, consultar),
    Carga("baixar", 1, baixar),
    Carga("agendar", 1, agendar),
    Carga("escutar", 1, escutar),
    Carga("erp_escrever", 1, erp.escrever),
    Carga("erp", 1, erp.pedir),
)


class Motor:
    """Starts every driver's threads; `parar` stops them and waits."""

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self._parar = threading.Event()
        self._fios: list[threading.Thread] = []
        self.erros: list[str] = []

    def iniciar(self) -> None:
        for carga in CARGAS:
            for i in range(carga.threads):
                sorte = random.Random(f"{self.soak.semente}:{carga.nome}:{i}")
                fio = threading.Thread(
                    target=self._rodar,
                    args=(carga, sorte),
                    name=f"carga-{carga.nome}-{i}",
                    daemon=True,
                )
                fio.start()
                self._fios.append(fio)

    def _rodar(self, carga: Carga, sorte: random.Random) -> None:
        try:
            carga.rodar(self.soak, sorte, self._parar)
        except Exception as erro:  # a driver's bug must show, not hang the run
            self.erros.append(f"{carga.nome}: {type(erro).__name__}: {erro}")
            raise

    def parar(self) -> None:
        self._parar.set()
        for fio in self._fios:
            fio.join(TIMEOUT_S + 10)
