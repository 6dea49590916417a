"""The soak's own deployment: a database (by default a private PostgreSQL
primary and its streaming replica), its data, two web servers, three
qclusters, an SMTP server and a webhook endpoint.

Every process is started by the tests' helpers (tests/processos.py: the
production web server, `manage.py qcluster`) with the knobs of
`parametros.AJUSTES`. Each connects to PostgreSQL under an
`application_name` that names it (`PGAPPNAME`: `caos-web-1`,
`caos-cluster-2`), which is how the fault injector tells whose backend it
terminates, and the harness's own connections are `caos-harness`.

A process that exits without a fault having killed it is restarted and
counted (`mortes_espontaneas`), as a process supervisor would.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
import psycopg
from psycopg import sql

from tests import processos
from tests.banco.instancias import Instancia, pasta_temporaria
from tests.caos.parametros import AJUSTES, TIPOS, Parametros
from tests.caos.receptores import CaixaIntermitente, ReceptorDeWebhooks

HARNESS = "caos-harness"
# Enough for 2 web servers x 2 workers x 2 threads, 3 clusters of 2
# workers (each with its heartbeat), their supervisors, and the ledger.
CONEXOES = "200"
TENANTS = 8
# Tenants 1 and 2 submit many different requests, fast: they live at their
# pending cap (429). Tenants 5 to 8 also have schedules.
PESADOS = (1, 2)
AGENDADOS = (5, 6, 7, 8)
EVENTOS = ["job.pronto", "job.falhou", "alerta.aberto", "alerta.fechado"]


@dataclass
class TenantDoSoak:
    indice: int
    id: int
    tokens: list[str]
    emails: list[str]
    webhook_id: int
    pesado: bool
    agendado: bool
    # The tenant's Slack integration (scheduled tenants only), named by its
    # schedules beside the webhook.
    chat_id: int | None = None


@dataclass
class Web:
    indice: int
    processo: processos.Processo
    url: str


@dataclass
class Cluster:
    indice: int
    processo: processos.Processo | None
    encarnacao: int = 1
    # Killed by the injector and not yet restarted: not a spontaneous death.
    derrubado: bool = False


@dataclass
class Morte:
    em: float
    quem: str
    log: str


@dataclass
class Implantacao:
    p: Parametros
    url: str = ""
    url_replica: str = ""
    primario: Instancia | None = None
    replica: Instancia | None = None
    pasta_pg: Path | None = None
    banco_compartilhado: str = ""
    webs: list[Web] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    tenants: list[TenantDoSoak] = field(default_factory=list)
    smtp: CaixaIntermitente | None = None
    ganchos: ReceptorDeWebhooks | None = None
    # The live events' process (SSE, ASGI): one, its address.
    eventos: processos.Processo | None = None
    url_eventos: str = ""
    mortes: list[Morte] = field(default_factory=list)
    _trava: threading.Lock = field(default_factory=threading.Lock)
    _zelar: threading.Event = field(default_factory=threading.Event)

    # --- the database ----------------------------------------------------------

    def criar_banco(self) -> None:
        """The database, migrated, and Django set up on it in this process.

        With the replica: a private primary and hot standby (initdb and
        pg_basebackup in /tmp, tests/banco/instancias.py), nothing shared with
        anyone. Without: `<DATABASE_URL's name>_caos_<hash of this checkout>`
        on DATABASE_URL's server, dropped at the end.
        """
        if self.p.replica:
            self.pasta_pg = pasta_temporaria("caos")
            self.primario = Instancia(self.pasta_pg, "primario").criar_primario()
            # Lock waits over a second are logged with who waits (the
            # application_name): a frozen process holding a lock shows there.
            self.primario._configurar(
                max_connections=CONEXOES,
                log_lock_waits="on",
                log_line_prefix="'%m [%p] %a '",
            )
            self.primario.iniciar()
            self.primario.sql("CREATE DATABASE relatorios", banco="postgres")
            self.url = self.primario.url()
        else:
            base = dj_database_url.parse(
                os.environ.get(
                    "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/relatorios"
                )
            )
            marca = hashlib.sha256(str(processos.RAIZ).encode()).hexdigest()[:6]
            self.banco_compartilhado = f"{base['NAME']}_caos_{marca}"
            self.url = (
                f"postgres://{base.get('USER') or 'postgres'}@"
                f"{base.get('HOST') or '127.0.0.1'}:{base.get('PORT') or 5432}/"
                f"{self.banco_compartilhado}"
            )
            self._apagar_compartilhado()
            with self._conectar_servidor() as conexao:
                conexao.execute(
                    sql.SQL("CREATE DATABASE {}").format(
                        sql.Identifier(self.banco_compartilhado)
                    )
                )
        os.environ.update(AJUSTES)
        os.environ.update(
            {
                "DATABASE_URL": self.url,
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "DJANGO_SECRET_KEY": processos.CHAVE_DE_TESTE,
                "DJANGO_STATIC_ROOT": str(self.p.saida / "estaticos"),
                "RELATORIOS_TIPOS_EXTRAS": TIPOS,
                "PGAPPNAME": HARNESS,
            }
        )
        import django
        from django.core.management import call_command

        django.setup()
        # aiosmtpd logs every SMTP command at INFO; the run's output is its figures.
        logging.getLogger("mail.log").setLevel(logging.WARNING)
        call_command("migrate", verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        from tests.caos.razao import TABELA

        with self.conectar() as conexao:
            conexao.execute(TABELA)

    def iniciar_replica(self) -> None:
        """The hot standby, made after the data so it starts nearly caught up."""
        if self.primario is None or self.pasta_pg is None:
            return
        self.replica = Instancia(self.pasta_pg, "replica").criar_replica_de(
            self.primario, max_connections=CONEXOES, hot_standby_feedback="on"
        )
        self.replica.iniciar()
        self.url_replica = self.replica.url()

    def conectar(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True, application_name=HARNESS)

    def _conectar_servidor(self) -> psycopg.Connection[Any]:
        base = dj_database_url.parse(self.url)
        return psycopg.connect(
            host=base.get("HOST") or "127.0.0.1",
            port=int(base.get("PORT") or 5432),
            user=base.get("USER") or "postgres",
            dbname="postgres",
            autocommit=True,
        )

    def _apagar_compartilhado(self) -> None:
        with self._conectar_servidor() as conexao:
            conexao.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(self.banco_compartilhado)
                )
            )

    # --- the data ----------------------------------------------------------------

    def preparar_dados(self) -> None:
        """Tenants with stores and sales, two users each (token and email),
        one webhook each on the receiver."""
        from django.core.management import call_command

        from relatorios.notificacoes import webhooks
        from tests import helpers

        assert self.ganchos is not None
        for indice in range(1, TENANTS + 1):
            tenant = helpers.criar_tenant(f"Caos {indice}")
            call_command(
                "gerar_dados",
                tenant=tenant.pk,
                lojas=4,
                vendas=3000,
                produtos=20,
                inicio="2026-01-01",
                dias=181,
                seed=indice,
                stdout=io.StringIO(),
            )
            tokens, emails = [], []
            for usuario in (1, 2):
                email = f"gerente{usuario}.t{indice}@caos.exemplo"
                _, token = helpers.criar_usuario(
                    tenant, username=f"caos{indice}u{usuario}", email=email
                )
                tokens.append(token)
                emails.append(email)
            webhook = webhooks.registrar_webhook(
                tenant_id=tenant.pk,
                url=self.ganchos.url(tenant.pk),
                eventos=EVENTOS,
                usuario_id=None,
            )
            self.ganchos.segredos[f"/ganchos/{tenant.pk}"] = webhook.segredo
            chat_id = None
            if indice in AGENDADOS:
                chat_id = webhooks.registrar_webhook(
                    tenant_id=tenant.pk,
                    canal="slack",
                    url=self.ganchos.url_do_chat(tenant.pk),
                    eventos=["alerta.aberto"],
                    usuario_id=None,
                ).pk
            self.tenants.append(
                TenantDoSoak(
                    indice=indice,
                    id=tenant.pk,
                    tokens=tokens,
                    emails=emails,
                    webhook_id=webhook.pk,
                    pesado=indice in PESADOS,
                    agendado=indice in AGENDADOS,
                    chat_id=chat_id,
                )
            )

    def criar_agendamento(
        self, tenant: TenantDoSoak, *, passo_s: int, prazo_s: float, numero: int
    ) -> tuple[int, float]:
        """A schedule firing every `passo_s` seconds (a cron with seconds),
        through the service (a deadline of seconds is below the API's
        minute). Returns its id and its `ativo_desde` (epoch seconds)."""
        from relatorios.agendamentos import agenda

        periodo = ("ontem", "semana_anterior", "mes_anterior")[numero % 3]
        agendamento = agenda.criar(
            tenant_id=tenant.id,
            tipo="teste_razao",
            periodo=periodo,
            cron=f"* * * * * */{passo_s}",
            prazo=timedelta(seconds=prazo_s),
            nome=f"caos t{tenant.indice} n{numero}",
            destinatarios=[f"agenda.t{tenant.indice}.n{numero}@caos.exemplo"],
            entrega=("anexo", "link")[numero % 2],
            webhooks=[tenant.webhook_id]
            + ([tenant.chat_id] if tenant.chat_id is not None else []),
            usuario_id=None,
        )
        agendamento.refresh_from_db()
        return agendamento.pk, agendamento.ativo_desde.timestamp()

    # --- the processes -----------------------------------------------------------

    def ambiente(self, nome: str) -> dict[str, str]:
        extras = {**AJUSTES, "RELATORIOS_TIPOS_EXTRAS": TIPOS, "PGAPPNAME": nome}
        extras["DATABASE_URL"] = self.url
        if self.url_replica:
            extras["RELATORIOS_REPLICA_URL"] = self.url_replica
        if self.smtp is not None:
            extras.update(self.smtp.ambiente())
        return extras

    def subir_receptores(self) -> None:
        self.smtp = CaixaIntermitente()
        self.ganchos = ReceptorDeWebhooks(
            taxa_de_500=self.p.taxa_de_500, semente=self.p.semente
        )

    def subir_processos(self) -> None:
        """The web servers, the events process, then the clusters (in
        parallel: each takes seconds to import Django on a busy host)."""
        for indice in range(1, self.p.webs + 1):
            self.webs.append(self._iniciar_web(indice))
        self._iniciar_eventos()
        self.clusters = [Cluster(i, None) for i in range(1, self.p.clusters + 1)]
        fios = [
            threading.Thread(target=self.reiniciar_cluster, args=(c,))
            for c in self.clusters
        ]
        for fio in fios:
            fio.start()
        for fio in fios:
            fio.join()
        threading.Thread(target=self._zelador, daemon=True, name="zelador").start()

    def _iniciar_web(self, indice: int) -> Web:
        nome = f"caos-web-{indice}"
        processo, url = processos.iniciar_web(
            self.p.saida / f"{nome}.{int(time.time())}.log", **self.ambiente(nome)
        )
        return Web(indice, processo, url)

    def _iniciar_eventos(self) -> None:
        """The SSE process (config/eventos.py); its connections are
        `caos-eventos`, so `pg_terminate_backend` may take its LISTEN."""
        nome = "caos-eventos"
        self.eventos, self.url_eventos = processos.iniciar_eventos(
            self.p.saida / f"{nome}.{int(time.time())}.log", **self.ambiente(nome)
        )

    def reiniciar_cluster(self, cluster: Cluster) -> None:
        """Start (or start again) a cluster; its log is new each time, since
        the helper waits for a line that the old log already has."""
        nome = f"caos-cluster-{cluster.indice}"
        if cluster.processo is not None:
            cluster.encarnacao += 1
        log = self.p.saida / f"{nome}.{cluster.encarnacao}.log"
        processo = processos.iniciar_cluster(log, **self.ambiente(nome))
        with self._trava:
            cluster.processo = processo
            cluster.derrubado = False

    def derrubar_cluster(self, cluster: Cluster) -> list[int]:
        """kill -9 of the whole cluster (its process group); the injector
        starts it again later."""
        with self._trava:
            processo = cluster.processo
            cluster.derrubado = True
        if processo is None:
            return []
        pids = descendentes(processo.pid)
        processo.matar()
        return pids

    def _zelador(self) -> None:
        while not self._zelar.wait(1.0):
            for web in list(self.webs):
                if not web.processo.vivo() and not self._zelar.is_set():
                    self.mortes.append(
                        Morte(time.time(), f"web {web.indice}", str(web.processo.log))
                    )
                    novo = self._iniciar_web(web.indice)
                    self.webs[web.indice - 1] = novo
            if self.eventos is not None and not self.eventos.vivo():
                if self._zelar.is_set():
                    return
                self.mortes.append(Morte(time.time(), "eventos", str(self.eventos.log)))
                self._iniciar_eventos()
            for cluster in self.clusters:
                with self._trava:
                    processo, derrubado = cluster.processo, cluster.derrubado
                if processo is None or derrubado or processo.vivo():
                    continue
                if self._zelar.is_set():
                    return
                self.mortes.append(
                    Morte(time.time(), f"cluster {cluster.indice}", str(processo.log))
                )
                with contextlib.suppress(RuntimeError):
                    self.reiniciar_cluster(cluster)

    # --- who is who ----------------------------------------------------------------

    def pids_do_cluster(self, cluster: Cluster) -> list[int]:
        processo = cluster.processo
        if processo is None or not processo.vivo():
            return []
        return descendentes(processo.pid)

    def workers_da_web(self, web: Web, *, idade_minima_s: float = 0) -> list[int]:
        """The web server's worker processes, at least this old: granian
        stops the whole server when a worker dies within 5.5 s of its
        (re)spawn, so the injector never kills a young one."""
        return [
            pid
            for pid in processos.filhos(web.processo.pid)
            if idade_s(pid) >= idade_minima_s
        ]

    def processos_vivos(self) -> Iterator[tuple[str, int]]:
        """(role, pid) of every process of the deployment, for the RSS samples."""
        for web in self.webs:
            if web.processo.vivo():
                yield f"web-{web.indice}", web.processo.pid
                for pid in processos.filhos(web.processo.pid):
                    yield f"web-{web.indice}", pid
        for cluster in self.clusters:
            for pid in self.pids_do_cluster(cluster):
                yield f"cluster-{cluster.indice}", pid
        if self.eventos is not None and self.eventos.vivo():
            yield "eventos", self.eventos.pid

    # --- the end ---------------------------------------------------------------------

    def descer(self) -> None:
        self._zelar.set()
        for web in self.webs:
            web.processo.parar(timeout=10)
        if self.eventos is not None:
            self.eventos.parar(timeout=10)
        for cluster in self.clusters:
            if cluster.processo is not None:
                cluster.processo.parar(timeout=10)
        if self.smtp is not None:
            self.smtp.parar()
        if self.ganchos is not None:
            self.ganchos.parar()
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        for instancia in (self.replica, self.primario):
            if instancia is not None:
                with contextlib.suppress(Exception):
                    subprocess.run(
                        ["kill", "-CONT", *map(str, pids_da_instancia(instancia))],
                        capture_output=True,
                        check=False,
                    )
                    instancia.parar()
        if self.pasta_pg is not None:
            for log in self.pasta_pg.glob("*.log"):
                with contextlib.suppress(OSError):
                    shutil.copy(log, self.p.saida / f"postgres-{log.name}")
            if not self.p.manter:
                shutil.rmtree(self.pasta_pg, ignore_errors=True)
        if self.banco_compartilhado and not self.p.manter:
            with contextlib.suppress(Exception):
                self._apagar_compartilhado()


def descendentes(pid: int) -> list[int]:
    """The process and everything it forked, breadth first."""
    vistos, fila = [], [pid]
    while fila:
        atual = fila.pop(0)
        if not Path(f"/proc/{atual}").exists():
            continue
        vistos.append(atual)
        fila.extend(processos.filhos(atual))
    return vistos


def idade_s(pid: int) -> float:
    """Seconds since the process started (0 when it is gone)."""
    try:
        campos = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        inicio = int(campos[19]) / os.sysconf("SC_CLK_TCK")
        desde_o_boot = float(Path("/proc/uptime").read_text().split()[0])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return 0.0
    return desde_o_boot - inicio


def rss_mb(pid: int) -> float | None:
    try:
        for linha in Path(f"/proc/{pid}/status").read_text().splitlines():
            if linha.startswith("VmRSS:"):
                return int(linha.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def pids_da_instancia(instancia: Instancia) -> list[int]:
    """A PostgreSQL server's postmaster and every process it forked."""
    arquivo = instancia.dados / "postmaster.pid"
    try:
        pid = int(arquivo.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return []
    return descendentes(pid)
