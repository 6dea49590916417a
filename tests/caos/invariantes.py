"""The invariants, checked once everything is final, from the database, the
receivers and what the clients saw. Each gives figures whose target is 0,
each with the one line of what it proves (and what it cannot).

A new invariant is a function and a line in `INVARIANTES`; one that needs a
feature not on main yet is a `pendente` line that says which.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from tests.caos.amostras import Amostras
from tests.caos.carga import AgendamentoDoSoak, Pedido, Soak
from tests.caos.erp import recomputacao
from tests.caos.falhas import JANELA_WEB_S, Registro, pids_congelados
from tests.caos.implantacao import Implantacao
from tests.caos.parametros import PREFIXO_DA_RAZAO as PREFIXO
from tests.caos.parametros import Parametros

# A zombie (a worker frozen past its lease) must stop its chunk this soon
# after SIGCONT: its heartbeat finds the fence closed within one beat and
# cancels the statement (docs/operacao.md, "a worker is paused").
ZUMBI_S = 5.0
# Around a deadline or a result's expiry, either answer is right: a job's
# concluido_em is its finishing statement's start, and on a loaded host the
# commit that makes it visible to the checker comes later.
FOLGA_S = 2.0
EXEMPLOS = 5
# A final state committed this long before a stream was closed must be on
# it: the events process hears of it through LISTEN and reads it back.
ENTREGA_SSE_S = 5.0


@dataclass(frozen=True)
class Marcos:
    """The run's instants (epoch seconds)."""

    inicio: float
    inicio_caos: float
    fim_carga: float
    fim: float
    # Seconds after the load until everything was final; None: the bound hit.
    final_em_s: float | None


@dataclass
class Colheita:
    """Everything the checks read."""

    p: Parametros
    impl: Implantacao
    soak: Soak
    falhas: list[Registro]
    amostras: Amostras
    marcos: Marcos

    def linhas(self, consulta: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.impl.conectar() as conexao:
            return conexao.execute(consulta, params).fetchall()


@dataclass
class Figura:
    nome: str
    valor: int | None  # None: cannot be checked on main yet
    prova: str
    exemplos: list[str] = field(default_factory=list)
    # Printed next to the invariants, not part of the verdict.
    informativo: bool = False


def figura(
    nome: str, exemplos: list[str], prova: str, *, informativo: bool = False
) -> Figura:
    return Figura(nome, len(exemplos), prova, exemplos[:EXEMPLOS], informativo)


# --- jobs -----------------------------------------------------------------------------


def jobs_finais(c: Colheita) -> list[Figura]:
    linhas = c.linhas(
        "SELECT id, status, coalesce(erro, '') FROM relatorio_jobs"
        " WHERE status NOT IN ('pronto', 'falhou')"
        "    OR (status = 'falhou' AND coalesce(erro, '') = '') ORDER BY id"
    )
    limite = f"{c.p.limite_final_s:g} s"
    return [
        figura(
            "jobs_nao_finais",
            [f"job {i}: {s}" for i, s, _ in linhas if s != "falhou"],
            f"every accepted job is pronto or falhou within {limite} of the load",
        ),
        figura(
            "jobs_falhos_sem_motivo",
            [f"job {i}" for i, s, _ in linhas if s == "falhou"],
            "every falhou job says why (erro)",
        ),
    ]


def _donos(nomes: str | None) -> list[int]:
    """The pids in a ledger conflict's holders (`caos-razao:<pid>`)."""
    pids = []
    for nome in (nomes or "").split(","):
        partes = nome.split(":")
        if len(partes) == 2 and partes[0] == PREFIXO and partes[1].isdigit():
            pids.append(int(partes[1]))
    return pids


@dataclass(frozen=True)
class Parte:
    id: int
    job_id: int
    tenant_id: int
    pid: int
    inicio: float
    fim: float | None
    conflito_job: str | None
    conflito_tenant: str | None


def _razao(c: Colheita) -> list[Parte]:
    return [
        Parte(*linha)
        for linha in c.linhas(
            "SELECT id, job_id, tenant_id, pid, extract(epoch FROM inicio)::float,"
            " extract(epoch FROM fim)::float, conflito_job, conflito_tenant"
            " FROM caos_razao ORDER BY id"
        )
    ]


class Zumbis:
    """Whether a chunk that held a lock when another started is explained by
    the injector: its process was frozen (SIGSTOP) before the other started,
    and it stopped within ZUMBI_S of being let go (or was killed)."""

    def __init__(self, c: Colheita, partes: list[Parte]) -> None:
        self.congelados = pids_congelados(c.falhas)
        self.mortos = {
            pid
            for r in c.falhas
            if not r.pulada and r.tipo in ("kill9_worker_cluster", "kill9_cluster")
            for pid in r.pids
        }
        self.partes_do_pid: dict[int, list[Parte]] = defaultdict(list)
        for parte in partes:
            self.partes_do_pid[parte.pid].append(parte)

    def explica(self, pid: int, em: float, job_id: int | None = None) -> bool:
        parte = self._parte_aberta(pid, em, job_id)
        desde = parte.inicio if parte is not None else float("-inf")
        for congelado, solto in self.congelados.get(pid, []):
            # A freeze that began before the conflict and overlapped the
            # holder's chunk (another freeze of the same pid explains nothing).
            if congelado > em or solto < desde:
                continue
            if parte is None:
                return True  # its chunk is over: not running any more
            if parte.fim is None:
                return pid in self.mortos
            if parte.fim <= solto + ZUMBI_S:
                return True
        return False

    def _parte_aberta(self, pid: int, em: float, job_id: int | None) -> Parte | None:
        candidatas = [
            p
            for p in self.partes_do_pid.get(pid, [])
            if p.inicio <= em
            and (p.fim is None or p.fim >= em)
            and (job_id is None or p.job_id == job_id)
        ]
        return candidatas[-1] if candidatas else None


def execucoes_concorrentes(c: Colheita) -> list[Figura]:
    partes = _razao(c)
    zumbis = Zumbis(c, partes)
    por_job: dict[int, list[Parte]] = defaultdict(list)
    for parte in partes:
        por_job[parte.job_id].append(parte)
    violacoes, explicadas = [], 0
    for parte in partes:
        if parte.conflito_job is None:
            continue
        donos = _donos(parte.conflito_job) or [
            # The holder let go between our try and our look at pg_locks:
            # the ledger's own intervals still say who was running.
            p.pid
            for p in por_job[parte.job_id]
            if p.pid != parte.pid
            and p.inicio <= parte.inicio
            and (p.fim is None or p.fim >= parte.inicio)
        ]
        if donos and all(
            zumbis.explica(dono, parte.inicio, parte.job_id) for dono in donos
        ):
            explicadas += 1
            continue
        violacoes.append(
            f"job {parte.job_id}: pid {parte.pid} começou a parte {parte.id}"
            f" com {parte.conflito_job or donos or '?'} ainda rodando"
        )
    return [
        figura(
            "execucoes_concorrentes",
            violacoes,
            "no job's report ran twice at once (ledger locks), unless the other"
            f" execution was a frozen worker that stopped within {ZUMBI_S:g} s"
            f" of SIGCONT ({explicadas} such zombies)",
        )
    ]


def tenant_no_limite(c: Colheita) -> list[Figura]:
    partes = _razao(c)
    zumbis = Zumbis(c, partes)
    limite = int(c.p.ajuste("RELATORIOS_MAX_EXECUTANDO_POR_TENANT"))
    amostrados = [
        f"tenant {a.tenant_id}: {a.executando} executando" for a in c.amostras.acima
    ]
    razao = []
    for parte in partes:
        if parte.conflito_tenant is None:
            continue
        donos = _donos(parte.conflito_tenant)
        if donos and any(zumbis.explica(dono, parte.inicio) for dono in donos):
            continue
        razao.append(
            f"tenant {parte.tenant_id}: parte {parte.id} do job {parte.job_id}"
            f" com as {limite} vagas ocupadas por {parte.conflito_tenant}"
        )
    return [
        figura(
            "tenant_acima_do_limite",
            amostrados + razao,
            f"no tenant had more than {limite} jobs executando in any of"
            f" {c.amostras.instantes} sampled instants, nor more than {limite}"
            " reports running at once (ledger), frozen zombies aside",
        )
    ]


def dedup(c: Colheita) -> list[Figura]:
    respostas = [
        f"{p.tipo} {p.inicio}..{p.fim} {p.agrupar} {','.join(p.lojas)}"
        f" (tenant {p.tenant}): jobs {sorted(ids)}"
        for p, ids in c.soak.respostas.items()
        if len(ids) > 1
    ]
    linhas = c.linhas("SELECT id, tenant_id, tipo, params FROM relatorio_jobs")
    por_pedido: dict[Pedido, list[int]] = defaultdict(list)
    for job_id, tenant_id, tipo, params in linhas:
        chave = Pedido(
            tenant_id,
            tipo,
            params.get("inicio"),
            params.get("fim"),
            params.get("agrupar", "dia"),
            tuple(sorted(params.get("lojas") or [])),
        )
        por_pedido[chave].append(job_id)
    linhas_dobradas = [
        f"{p.tipo} {p.inicio}..{p.fim} (tenant {p.tenant}): jobs {ids}"
        for p, ids in por_pedido.items()
        if len(ids) > 1
    ]
    pedidos = len(c.soak.respostas)
    return [
        figura(
            "dedup_quebrado",
            respostas + linhas_dobradas,
            f"each of {pedidos} logical requests (sent in different spellings)"
            " was always answered with one job, and has one row",
        )
    ]


# --- schedules ------------------------------------------------------------------------


def _janelas(agendamento: AgendamentoDoSoak) -> tuple[list[tuple], list[tuple]]:
    """(owed intervals, ambiguous intervals) of a schedule's planned firings.

    Owed from its creation (exact: the row's ativo_desde) until a pause or
    delete took effect, and again after a resume; an action took effect
    somewhere between its request and its answer, so a firing planned in
    that window may or may not exist.
    """
    devidos, ambiguos = [], []
    inicio: float | None = agendamento.criado
    for evento in sorted(agendamento.eventos, key=lambda e: e.inicio):
        if not evento.ok:
            continue
        ambiguos.append((evento.inicio, evento.fim))
        if evento.acao in ("pausar", "excluir") and inicio is not None:
            devidos.append((inicio, evento.inicio))
            inicio = None
        elif evento.acao == "retomar" and inicio is None:
            inicio = evento.fim
    if inicio is not None:
        devidos.append((inicio, float("inf")))
    return devidos, ambiguos


def ocorrencias(c: Colheita) -> list[Figura]:
    linhas = c.linhas(
        "SELECT agendamento_id, extract(epoch FROM planejado_para)::float, estado"
        " FROM relatorio_ocorrencias"
    )
    por_agendamento: dict[int, dict[float, str]] = defaultdict(dict)
    for agendamento_id, planejado, estado in linhas:
        por_agendamento[agendamento_id][planejado] = estado
    faltando, indevidas = [], []
    for a in c.soak.agendamentos:
        devidos, ambiguos = _janelas(a)
        linhas_do_agendamento = por_agendamento.get(a.id, {})
        for planejado, estado in linhas_do_agendamento.items():
            if planejado != int(planejado) or int(planejado) % a.passo_s:
                indevidas.append(f"agendamento {a.id}: {planejado} fora do cron")
            elif not _dentro(planejado, devidos) and not _dentro(planejado, ambiguos):
                indevidas.append(
                    f"agendamento {a.id}: {estado} em {planejado:.0f}, pausado"
                )
        for de, ate in devidos:
            fim = min(ate, c.marcos.fim_carga + 60)
            primeiro = int(de) // a.passo_s * a.passo_s + a.passo_s
            for planejado in range(primeiro, int(fim) + 1, a.passo_s):
                if planejado <= de or planejado >= ate:
                    continue
                if _dentro(planejado, ambiguos):
                    continue
                if float(planejado) not in linhas_do_agendamento:
                    faltando.append(f"agendamento {a.id}: {planejado} sem ocorrência")
    n = len(c.soak.agendamentos)
    return [
        figura(
            "ocorrencias_faltando",
            faltando,
            f"every firing due while each of {n} schedules was active has its"
            " one ledger row (fired, or recorded skipped/not fired)",
        ),
        figura(
            "ocorrencias_indevidas",
            indevidas,
            "no occurrence off the cron or planned while its schedule was paused",
        ),
    ]


def _dentro(instante: float, janelas: Iterable[tuple[float, float]]) -> bool:
    return any(de <= instante <= ate for de, ate in janelas)


def alertas(c: Colheita) -> list[Figura]:
    """An alert for each occurrence whose report was not pronto by its
    deadline (never fired, skipped, refused, failed, late), none for the
    others (`_alerta_devido`)."""
    validade = c.p.ajuste("RELATORIOS_VALIDADE_S")
    ids = [a.id for a in c.soak.agendamentos]
    linhas = c.linhas(
        """
        SELECT o.id, o.estado, o.job_id, extract(epoch FROM o.prazo_em)::float,
               extract(epoch FROM o.disparada_em)::float,
               extract(epoch FROM a.aberto_em)::float, a.motivo
          FROM relatorio_ocorrencias o
          LEFT JOIN relatorio_alertas a ON a.ocorrencia_id = o.id
         WHERE o.agendamento_id = ANY(%s)
        """,
        [ids],
    )
    prontos: dict[int, list[float]] = defaultdict(list)
    for job_id, terminado in c.linhas(
        "SELECT job_id, extract(epoch FROM terminado_em)::float"
        " FROM relatorio_tentativas WHERE desfecho = 'pronto'"
    ):
        prontos[job_id].append(terminado)
    faltando, indevidos, expirados, ambiguos = [], [], [], 0
    for ocorrencia_id, estado, job_id, prazo, disparada, aberto, motivo in linhas:
        vista = c.amostras.disparadas.get(ocorrencia_id)
        if job_id is None or disparada is None:
            devido: bool | None = True
        else:
            devido = _alerta_devido(prontos[job_id], disparada, vista, prazo, validade)
        historia = (
            f"ocorrência {ocorrencia_id} ({estado}): disparada {disparada}, vista"
            f" {vista}, prazo {prazo:.1f}; job {job_id} pronto em"
            f" {[round(t, 1) for t in prontos[job_id]]}; alerta {motivo!r} {aberto}"
        )
        if devido is None:
            ambiguos += 1
        elif devido and aberto is None:
            faltando.append(historia)
        elif not devido and aberto is not None:
            # Opened after every result that made it in time had expired: the
            # checker once judged the job as it was when it looked (fixed:
            # docs/caos.md, "What the soak found").
            validos = [
                t for t in prontos[job_id] if t <= prazo and t + validade >= aberto
            ]
            (indevidos if validos else expirados).append(historia)
    return [
        figura(
            "alertas_faltando",
            faltando,
            "every occurrence not pronto by its deadline (not fired, skipped,"
            " refused, failed, late) has its alert",
        ),
        figura(
            "alertas_indevidos",
            indevidos,
            f"no alert for an occurrence pronto in time while that result stood"
            f" ({ambiguos} within {FOLGA_S:g} s of a boundary not judged)",
        ),
        figura(
            "alertas_apos_resultado_expirado",
            expirados,
            "no alert for an occurrence that was pronto in time, opened after"
            " that result expired and its job was restarted",
        ),
    ]


def _alerta_devido(
    prontos: list[float],
    disparada: float,
    vista: float | None,
    prazo: float,
    validade: float,
) -> bool | None:
    """True: the report was not pronto by its deadline; False: it was; None:
    too close to call.

    Pronto in time: the occurrence was fired before its deadline and a result
    finished by then was valid at some instant after the firing (a result
    the firing found pronto counts, as one finished later does). The firing
    happened after `disparada` (its pass's start) and before `vista` (when a
    sample first saw it fired; None: never seen). Within FOLGA_S of a
    boundary (concluido_em is the finishing statement's start, its commit is
    later), either answer is right.
    """
    a_tempo = (
        vista is not None
        and vista <= prazo - FOLGA_S
        and any(
            t <= prazo - FOLGA_S and t + validade >= vista + FOLGA_S for t in prontos
        )
    )
    quase = disparada <= prazo + FOLGA_S and any(
        t <= prazo + FOLGA_S and t + validade >= disparada - FOLGA_S for t in prontos
    )
    if a_tempo:
        return False
    if not quase:
        return True
    return None


# --- deliveries -----------------------------------------------------------------------


def _entregas(c: Colheita) -> list[tuple[Any, ...]]:
    return c.linhas(
        "SELECT id, canal, evento, mensagem_id, destinatarios, payload, estado,"
        " tentativas, coalesce(ultimo_erro, ''), webhook_id, tenant_id"
        " FROM relatorio_entregas ORDER BY id"
    )


def entregas_finais(c: Colheita) -> list[Figura]:
    linhas = _entregas(c)
    return [
        figura(
            "entregas_nao_finais",
            [f"entrega {e[0]} ({e[2]})" for e in linhas if e[6] == "pendente"],
            "every notification is entregue or falhou after the load",
        ),
        figura(
            "entregas_falhas_sem_motivo",
            [f"entrega {e[0]}" for e in linhas if e[6] == "falhou" and not e[8]],
            "every notification given up says why (ultimo_erro)",
        ),
    ]


def emails(c: Colheita) -> list[Figura]:
    """Matched by Message-ID: each delivery's is derived from its
    `mensagem_id` and the same on every attempt (canais/email), so the SMTP
    server's record says exactly which delivery each message was."""
    from relatorios.notificacoes.canais.email.transporte import message_id

    smtp = c.impl.smtp
    assert smtp is not None
    recebidos = Counter(
        (destinatario, e.message_id)
        for e in smtp.emails
        for destinatario in e.destinatarios
    )
    esperados: dict[tuple[str, str], tuple[str, int]] = {}
    for (
        _id,
        canal,
        _ev,
        mensagem_id,
        destinatarios,
        _payload,
        estado,
        tentativas,
        *_,
    ) in _entregas(c):
        if canal != "email":
            continue
        for destinatario in destinatarios:
            chave = (destinatario.lower(), message_id(mensagem_id))
            esperados[chave] = (estado, tentativas)
    perdidos, alem, repetidos, estranhos = [], [], [], []
    for chave, (estado, tentativas) in esperados.items():
        r = recebidos[chave]
        if estado == "entregue" and r < 1:
            perdidos.append(f"{chave[0]} {chave[1]}: não chegou")
        if r > tentativas:
            alem.append(f"{chave[0]} {chave[1]}: {r} em {tentativas} tentativas")
        if r > 1:
            repetidos.append(f"{chave[0]} {chave[1]}: {r} cópias")
    for chave, r in recebidos.items():
        if chave not in esperados:
            estranhos.append(f"{chave[0]} {chave[1] or '(sem Message-ID)'}: {r}")
    total = sum(1 for estado, _ in esperados.values() if estado == "entregue")
    return [
        figura(
            "emails_perdidos",
            perdidos,
            f"each of {total} email deliveries marked entregue reached its"
            " recipient (the SMTP server's messages, by Message-ID)",
        ),
        figura(
            "emails_alem_das_tentativas",
            alem,
            "no email arrived more often than its delivery was attempted",
        ),
        figura(
            "emails_sem_entrega",
            estranhos,
            f"every one of {sum(recebidos.values())} messages received carries"
            " the Message-ID of an email delivery to that recipient",
        ),
        figura(
            "emails_repetidos",
            repetidos,
            "copies after an attempt that sent but could not record it (a"
            " killed worker, a dropped connection): at-least-once, each copy"
            " with its delivery's Message-ID, so a mail client drops it",
            informativo=True,
        ),
    ]


def webhooks(c: Colheita) -> list[Figura]:
    ganchos = c.impl.ganchos
    assert ganchos is not None
    caminho_do_webhook = {t.webhook_id: f"/ganchos/{t.id}" for t in c.impl.tenants}
    validos = [p for p in ganchos.pedidos if p.assinatura_valida]
    ids_por_evento: dict[tuple[str, str], set[str]] = defaultdict(set)
    aceitos: set[tuple[str, str]] = set()
    copias: Counter[str] = Counter()
    for pedido in validos:
        ids_por_evento[(pedido.caminho, pedido.assunto)].add(pedido.webhook_id)
        copias[pedido.webhook_id] += 1
        if 200 <= pedido.status < 300:
            aceitos.add((pedido.caminho, pedido.webhook_id))
    perdidos, alem, conhecidos = [], [], set()
    for (
        entrega_id,
        canal,
        evento,
        mensagem_id,
        *_r,
        estado,
        tentativas,
        _e,
        w,
        _t,
    ) in _entregas(c):
        if canal != "webhook":
            continue
        conhecidos.add(mensagem_id)
        caminho = caminho_do_webhook.get(w, "?")
        if estado == "entregue" and (caminho, mensagem_id) not in aceitos:
            perdidos.append(f"entrega {entrega_id} ({evento}) {mensagem_id}")
        if copias[mensagem_id] > tentativas:
            alem.append(f"{mensagem_id}: {copias[mensagem_id]} em {tentativas}")
    varios_ids = [
        f"{caminho} {assunto}: {sorted(ids)}"
        for (caminho, assunto), ids in ids_por_evento.items()
        if len(ids) > 1
    ]
    fantasmas = sorted({p.webhook_id for p in validos} - conhecidos)
    invalidos = [
        f"{p.caminho} {p.webhook_id}: {p.erro}"
        for p in ganchos.pedidos
        if not p.assinatura_valida and not p.cortado
    ]
    cortados = sum(1 for p in ganchos.pedidos if p.cortado)
    return [
        figura(
            "webhooks_com_mais_de_um_id",
            varios_ids,
            f"each of {len(ids_por_evento)} events arrived under one webhook-id,"
            " retries included",
        ),
        figura(
            "webhooks_perdidos",
            perdidos,
            "every webhook delivery marked entregue was answered 2xx by the receiver",
        ),
        figura(
            "webhooks_alem_das_tentativas",
            alem,
            "no webhook-id arrived more often than its delivery was attempted",
        ),
        figura(
            "webhooks_fantasmas",
            fantasmas,
            "every webhook-id received is an outbox row",
        ),
        figura(
            "webhooks_assinatura_invalida",
            invalidos,
            "every request verifies with its tenant's secret (standardwebhooks;"
            f" {cortados} cut short by a sender killed mid-POST left out)",
        ),
    ]


def entregas_agendadas(c: Colheita) -> list[Figura]:
    """Each occurrence whose report is pronto was delivered: one email per
    recipient and one `agendamento.entregue` per named webhook, written."""
    ids = [a.id for a in c.soak.agendamentos]
    linhas = c.linhas(
        """
        SELECT o.id, o.entregue_em IS NOT NULL,
               jsonb_array_length(g.destinatarios) + jsonb_array_length(g.webhooks),
               (SELECT count(*) FROM relatorio_entregas e WHERE e.ocorrencia_id = o.id)
          FROM relatorio_ocorrencias o
          JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
          JOIN relatorio_jobs j ON j.id = o.job_id AND j.status = 'pronto'
         WHERE o.agendamento_id = ANY(%s)
        """,
        [ids],
    )
    faltando = [
        f"ocorrência {o}: entregue={e}, {n} de {d} entregas"
        for o, e, d, n in linhas
        if not e or n != d
    ]
    return [
        figura(
            "agendados_nao_entregues",
            faltando,
            f"each of {len(linhas)} occurrences with a pronto report was"
            " delivered once to each recipient and named webhook",
        )
    ]


# --- the web and the processes --------------------------------------------------------


def respostas_http(c: Colheita) -> list[Figura]:
    janelas: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for r in c.falhas:
        for web in r.webs:
            janelas[web].append((r.inicio - 0.5, max(r.fim, r.inicio) + JANELA_WEB_S))
    erros, sem_resposta, desculpados = [], [], Counter()
    for chamada in c.soak.chamadas:
        falhou = chamada.status is None or chamada.status >= 500
        if not falhou:
            continue
        if any(
            chamada.inicio <= ate and chamada.fim >= de
            for de, ate in janelas.get(chamada.web, [])
        ):
            desculpados[chamada.status or 0] += 1
            continue
        texto = (
            f"{chamada.metodo} {chamada.caminho} (web {chamada.web}):"
            f" {chamada.status or chamada.erro}"
        )
        (sem_resposta if chamada.status is None else erros).append(texto)
    nota = ", ".join(
        f"{n} {'sem resposta' if s == 0 else s}" for s, n in sorted(desculpados.items())
    )
    return [
        figura(
            "http_5xx_fora_de_janela",
            erros,
            f"no 5xx of {len(c.soak.chamadas)} requests outside a fault on its"
            f" web server (within its {JANELA_WEB_S:g} s window: {nota or 'none'})",
        ),
        figura(
            "http_sem_resposta_fora_de_janela",
            sem_resposta,
            "every request outside those windows was answered",
        ),
    ]


def isolamento(c: Colheita) -> list[Figura]:
    return [
        figura(
            "job_de_outro_tenant_visivel",
            c.soak.vazamentos,
            "another tenant's job was always a 404",
        )
    ]


def mortes(c: Colheita) -> list[Figura]:
    return [
        figura(
            "mortes_espontaneas",
            [f"{m.quem} ({m.log})" for m in c.impl.mortes],
            "no web server or cluster exited unless the injector killed it",
        )
    ]


def rss(c: Colheita) -> list[Figura]:
    """RSS growth of each long-lived process: the median of its samples in
    the last fifth of the load, minus the median in the fifth after its
    warm-up (the first fifth of the load, or of its own life after a
    respawn: imports and first requests, not a leak). A process that lived
    less than two fifths of the load after its warm-up is not measured."""
    m = c.marcos
    quinto = (m.fim_carga - m.inicio) / 5
    final = (m.fim_carga - quinto, m.fim_carga)
    crescimentos, curtos = [], 0
    for (papel, pid), amostras in c.amostras.rss.items():
        desde = max(m.inicio, amostras[0][0]) + quinto
        if final[0] - desde < quinto or amostras[-1][0] < final[0]:
            curtos += 1
            continue
        antes = [mb for t, mb in amostras if desde <= t <= desde + quinto]
        depois = [mb for t, mb in amostras if final[0] <= t <= final[1]]
        if antes and depois:
            crescimentos.append(
                (statistics.median(depois) - statistics.median(antes), papel, pid)
            )
    crescimentos.sort(reverse=True)
    acima = [
        f"{papel} pid {pid}: +{mb:.1f} MB"
        for mb, papel, pid in crescimentos
        if mb > c.p.rss_limite_mb
    ]
    maior = (
        f"largest {crescimentos[0][0]:+.1f} MB ({crescimentos[0][1]})"
        if crescimentos
        else "none measured"
    )
    return [
        figura(
            "rss_acima_do_limite",
            acima,
            f"no long-lived process ({len(crescimentos)} measured, {curtos} too"
            f" short-lived) grew more than {c.p.rss_limite_mb:g} MB after its"
            f" warm-up; {maior}",
        )
    ]


# --- issues 26 and 28: delivery slots, revoked links, chats, the replica -------------


def entregas_nas_vagas(c: Colheita) -> list[Figura]:
    vagas = int(c.p.ajuste("RELATORIOS_MAX_ENTREGAS_POR_TENANT"))
    acima = [
        f"tenant {a.tenant_id}: {a.executando} entregas em voo"
        for a in c.amostras.entregas_acima
    ]
    return [
        figura(
            "entregas_acima_das_vagas",
            acima,
            f"no tenant had more than {vagas} deliveries in flight (a queue"
            f" message or a sender on them) in any of {c.amostras.instantes}"
            f" sampled instants (most seen: {c.amostras.entregas_max})",
        )
    ]


def _instante(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def links_revogados(c: Colheita) -> list[Figura]:
    """A scheduled report's link must answer 410 once its schedule is
    deleted or its result has been recomputed (the job restarted: an attempt
    started after the result the link names). The first is the soak's
    deletes racing the firings; the second its 20-second results."""
    por_caminho: dict[str, tuple[int, float, float | None]] = {}
    for payload, job_id, excluido in c.linhas(
        """
        SELECT e.payload, o.job_id, extract(epoch FROM g.excluido_em)::float
          FROM relatorio_entregas e
          JOIN relatorio_ocorrencias o ON o.id = e.ocorrencia_id
          JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
         WHERE e.evento = 'agendamento.entregue'
        """
    ):
        dados = payload.get("data") or {}
        url = (dados.get("download") or {}).get("url")
        concluido = (dados.get("job") or {}).get("concluido_em")
        if url and concluido:
            por_caminho[urlsplit(url).path] = (job_id, _instante(concluido), excluido)
    reinicios: dict[int, list[float]] = defaultdict(list)
    for job_id, iniciado in c.linhas(
        "SELECT job_id, extract(epoch FROM iniciado_em)::float"
        " FROM relatorio_tentativas ORDER BY iniciado_em"
    ):
        reinicios[job_id].append(iniciado)
    servidos, julgados, respostas = [], 0, Counter()
    for chamada in c.soak.chamadas:
        if not chamada.caminho.startswith("/baixar/"):
            continue
        link = por_caminho.get(chamada.caminho)
        if link is None:
            continue
        job_id, concluido, excluido = link
        recalculado = next((t for t in reinicios[job_id] if t > concluido), None)
        revogado = min(
            (t for t in (excluido, recalculado) if t is not None), default=None
        )
        # Within FOLGA_S of it either answer is right (the revoking
        # statement's now() is its start; it commits later).
        if revogado is None or chamada.inicio < revogado + FOLGA_S:
            continue
        julgados += 1
        respostas[str(chamada.status)] += 1
        if chamada.status == 200:
            servidos.append(
                f"{chamada.caminho[:40]}…: 200 {chamada.inicio - revogado:.1f} s"
                f" depois de {'excluído' if revogado == excluido else 'recalculado'}"
            )
    vistas = ", ".join(f"{n}× {s}" for s, n in sorted(respostas.items()))
    return [
        figura(
            "link_revogado_servido",
            servidos,
            f"no file served from a link whose schedule was deleted or whose"
            f" result was recomputed ({julgados} such downloads: {vistas or 'none'})",
        )
    ]


def chats(c: Colheita) -> list[Figura]:
    """The Slack-shaped endpoint: each scheduled report's chat delivery
    marked entregue reached it (answered 2xx), never more often than
    attempted. A chat's webhook has no message id, so a delivery is told by
    its download link (unique per destination); at-least-once copies are
    printed, not judged (nothing on the chat's side could drop them)."""
    ganchos = c.impl.ganchos
    assert ganchos is not None
    aceitos: Counter[str] = Counter()
    copias: Counter[str] = Counter()
    for mensagem in ganchos.chats:
        for link in mensagem.links():
            caminho = urlsplit(link).path
            copias[caminho] += 1
            if 200 <= mensagem.status < 300:
                aceitos[caminho] += 1
    perdidos, alem, repetidos, total = [], [], [], 0
    for entrega_id, canal, evento, _m, _d, payload, estado, tentativas, *_ in _entregas(
        c
    ):
        if canal != "slack" or evento != "agendamento.entregue":
            continue
        total += 1
        url = ((payload.get("data") or {}).get("download") or {}).get("url", "")
        caminho = urlsplit(url).path
        if estado == "entregue" and not aceitos[caminho]:
            perdidos.append(f"entrega {entrega_id}: {caminho[:40]}… não chegou")
        if copias[caminho] > tentativas:
            alem.append(f"entrega {entrega_id}: {copias[caminho]} em {tentativas}")
        if aceitos[caminho] > 1:
            repetidos.append(f"entrega {entrega_id}: {aceitos[caminho]} aceitas")
    return [
        figura(
            "mensagem_de_chat_perdida",
            perdidos,
            f"each of {total} scheduled reports' Slack deliveries marked entregue"
            f" reached the chat ({len(ganchos.chats)} messages received)",
        ),
        figura(
            "mensagem_de_chat_alem_das_tentativas",
            alem,
            "no chat message arrived more often than its delivery was attempted",
        ),
        figura(
            "mensagens_de_chat_repetidas",
            repetidos,
            "copies accepted twice (a sender that could not record its"
            " success): at-least-once, and a chat has no id to drop them by",
            informativo=True,
        ),
    ]


def replica(c: Colheita) -> list[Figura]:
    """No report failed because of the replica (restarted, frozen, replay
    paused): the reads fall back to the primary. Read from the attempts'
    errors, which name the server a connection failed on."""
    if not c.impl.url_replica:
        return [Figura("relatorio_falhou_pela_replica", None, "run without a replica")]
    porta = urlsplit(c.impl.url_replica).port
    marcas = ("replica", "réplica", "standby", "recovery", f"port {porta}")
    falhos, tentativas = [], 0
    for job_id, tipo, status, erro in c.linhas(
        """
        SELECT j.id, j.tipo, j.status, coalesce(t.erro, '')
          FROM relatorio_tentativas t JOIN relatorio_jobs j ON j.id = t.job_id
         WHERE t.desfecho <> 'pronto' AND t.erro IS NOT NULL
        """
    ):
        if not any(m in erro.lower() for m in marcas):
            continue
        tentativas += 1
        if status == "falhou" and tipo != "teste_quebrado":
            falhos.append(f"job {job_id} ({tipo}): {erro[:120]}")
    return [
        figura(
            "relatorio_falhou_pela_replica",
            falhos,
            f"no report failed because of the replica ({tentativas} attempts"
            " ended by a replica error, each retried)",
        )
    ]


def _cadeias(c: Colheita) -> list[tuple[int, float, float, list[Any]]]:
    """Each tenant's streams joined into what one EventSource would have
    seen: a stream resumed with Last-Event-ID continues the one before it
    (the server replays what happened in between); one opened without
    starts anew. (tenant, from, until, events in the order received)."""
    cadeias: list[tuple[int, float, float, list[Any]]] = []
    abertas: dict[int, int] = {}
    for f in sorted(c.soak.fluxos, key=lambda f: f.aberto):
        eventos = list(f.fluxo.eventos) if f.fluxo is not None else []
        fim = f.fechado or c.marcos.fim_carga
        indice = abertas.get(f.tenant)
        if f.retomado_de is None or indice is None:
            if f.respondido is None or f.fluxo is None or f.fluxo.status != 200:
                continue  # never opened: nothing was promised
            abertas[f.tenant] = len(cadeias)
            cadeias.append((f.tenant, f.respondido, fim, eventos))
        else:
            tenant, inicio, _, anteriores = cadeias[indice]
            cadeias[indice] = (tenant, inicio, fim, anteriores + eventos)
    return cadeias


def eventos_ao_vivo(c: Colheita) -> list[Figura]:
    """Every job that became final (pronto or falhou) while a tenant's
    stream was open, or was resumed across, was seen final on it, with the
    instant the database recorded (`concluido_em`); ids only grow, none
    repeated; no `lacuna` (events are kept an hour, the soak lasts less)."""
    # (job, final status, instant). A pronto's ledger row and its job row
    # share one statement's now(); a falhou's are written apart, so each
    # final is matched to an event of that job and status within a second.
    finais: dict[int, set[tuple[int, str, float]]] = defaultdict(set)
    for job_id, tenant_id, status, instante in c.linhas(
        """
        SELECT t.job_id, j.tenant_id, t.desfecho,
               extract(epoch FROM t.terminado_em)::float
          FROM relatorio_tentativas t JOIN relatorio_jobs j ON j.id = t.job_id
         WHERE t.desfecho IN ('pronto', 'falhou')
        UNION
        SELECT id, tenant_id, status, extract(epoch FROM concluido_em)::float
          FROM relatorio_jobs
         WHERE status IN ('pronto', 'falhou') AND concluido_em IS NOT NULL
        """
    ):
        finais[tenant_id].add((job_id, status, instante))
    perdidos, fora_de_ordem, lacunas = [], [], []
    julgados = recebidos = 0
    for tenant, inicio, fim, eventos in _cadeias(c):
        vistos: dict[tuple[int, str], list[float]] = defaultdict(list)
        anterior = 0
        for evento in eventos:
            recebidos += 1
            if evento.id is not None and evento.id.isdigit():
                if int(evento.id) <= anterior:
                    fora_de_ordem.append(
                        f"tenant {tenant}: id {evento.id} depois de {anterior}"
                    )
                anterior = max(anterior, int(evento.id))
            if evento.tipo == "lacuna":
                lacunas.append(f"tenant {tenant}: {evento.dados}")
            if evento.tipo in ("job.pronto", "job.falhou"):
                dados = (evento.dados or {}).get("data") or {}
                if dados.get("concluido_em"):
                    vistos[(int(dados["id"]), evento.tipo[4:])].append(
                        _instante(dados["concluido_em"])
                    )
        # The ledger's row and the job's row of one final are one final.
        unicos: dict[tuple[int, str], list[float]] = defaultdict(list)
        for job_id, status, instante in sorted(finais[tenant]):
            anteriores = unicos[(job_id, status)]
            if not anteriores or instante - anteriores[-1] > 1.0:
                anteriores.append(instante)
        for (job_id, status), instantes in sorted(unicos.items()):
            livres = list(vistos[(job_id, status)])
            for instante in instantes:
                casado = next((v for v in livres if abs(v - instante) <= 1.0), None)
                if casado is not None:
                    livres.remove(casado)
                if not inicio + FOLGA_S <= instante <= fim - ENTREGA_SSE_S:
                    continue
                julgados += 1
                if casado is None:
                    perdidos.append(
                        f"tenant {tenant}: job {job_id} {status} em {instante:.3f}"
                        f" não visto no fluxo aberto de {inicio:.1f} a {fim:.1f}"
                    )
    retomadas = sum(1 for f in c.soak.fluxos if f.retomado_de is not None)
    return [
        figura(
            "evento_sse_perdido",
            perdidos,
            f"each of {julgados} jobs' final states reached while a tenant"
            f" stream was open (or resumed) was seen on it ({len(c.soak.fluxos)}"
            f" streams, {retomadas} resumed with Last-Event-ID, {recebidos} events)",
        ),
        figura(
            "evento_sse_fora_de_ordem",
            fora_de_ordem,
            "on each stream, resumes included, event ids only grow (none repeated)",
        ),
        figura(
            "evento_sse_lacuna",
            lacunas,
            "no resume found its last event gone (lacuna)",
        ),
    ]


def pendente(nome: str, falta: str) -> Callable[[Colheita], list[Figura]]:
    """A hook for an invariant whose feature is not on main yet."""

    def verificar(c: Colheita) -> list[Figura]:
        return [Figura(nome, None, f"not checkable yet: {falta}")]

    return verificar


@dataclass(frozen=True)
class Invariante:
    nome: str
    verificar: Callable[[Colheita], list[Figura]]


# The registry, in the order they are printed.
INVARIANTES = (
    Invariante("jobs finais", jobs_finais),
    Invariante("execuções concorrentes", execucoes_concorrentes),
    Invariante("dedup", dedup),
    Invariante("limite por tenant", tenant_no_limite),
    Invariante("ocorrências", ocorrencias),
    Invariante("alertas", alertas),
    Invariante("entregas", entregas_finais),
    Invariante("e-mails", emails),
    Invariante("webhooks", webhooks),
    Invariante("entregas agendadas", entregas_agendadas),
    Invariante("http", respostas_http),
    Invariante("isolamento", isolamento),
    Invariante("processos", mortes),
    Invariante("memória", rss),
    Invariante("vagas de entrega", entregas_nas_vagas),
    Invariante("links revogados", links_revogados),
    Invariante("canais de chat", chats),
    Invariante("réplica", replica),
    Invariante("eventos ao vivo", eventos_ao_vivo),
    Invariante("recomputação", recomputacao),
    Invariante(
        "réplica limitada",
        pendente(
            "leitura_mais_velha_que_o_limite",
            "a report's read position on the replica is not recorded anywhere"
            " the soak can read",
        ),
    ),
    Invariante(
        "limites de download",
        pendente(
            "download_alem_do_limite",
            "the soak downloads far below the per-link and per-address limits",
        ),
    ),
)


def verificar(c: Colheita) -> list[Figura]:
    return [f for invariante in INVARIANTES for f in invariante.verificar(c)]
