"""Scheduled reports: cron in the tenant's time zone, relative periods, management.

The firing itself is `agendamentos.disparo`; this module gives it its times.

Seed 004: "Um laço setInterval dentro de um serviço com quatro instâncias
executa quatro vezes". Here the firing is a row, not a timer: every cluster's
supervisor loop calls `disparo.disparar`, and firing an occurrence means inserting its
ledger row (unique per schedule and planned time, ON CONFLICT DO NOTHING) and
submitting through `pedidos.submeter` in the same transaction. However many
clusters fire at once, one inserts the row; through the chave, a scheduled run
and a manager's manual request for the same period share one job.

Why the supervisor loop and not django-q2's scheduler: django-q2 checks its
schedules about every 30 s and knows neither time zones per tenant nor our
catch-up policy nor the ledger the absence checker (`alertas`) compares with.
The loop already runs in every cluster, is restarted with it, and every step
here is a guarded statement, so any number of copies is safe.

Cron expressions are evaluated on the tenant's wall clock: croniter walks
naive local times, and each is placed on the time line with fold=0, so a
firing inside a DST gap (02:30 on a spring-forward day) happens once, at the
instant the gap maps to, and a repeated hour fires once (its first pass).
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

from croniter import CroniterBadCronError, CroniterBadDateError, croniter
from django.conf import settings
from django.db import connection, transaction

from relatorios import tipos
from relatorios.banco.comum import agora_do_banco, repetivel
from relatorios.models import (
    Agendamento,
    FormaDeEntrega,
    Periodo,
    PularEntrega,
    Recuperacao,
    Tenant,
    Webhook,
    reservar_vaga,
)
from relatorios.notificacoes import enderecos
from relatorios.tipos.normalizacao import ErroDeParametro
from relatorios.tipos.periodos import periodo_concreto

logger = logging.getLogger(__name__)


# Walking a cron from a little before the window covers UTC offsets and gaps.
_MARGEM_LOCAL = timedelta(hours=3)


PRAZO_MAX = timedelta(days=62)

# The texts a tenant stores in a schedule, and their limits (docs/agendamentos.md,
# "Limits"). Checked here, so the API, the pages and the admin share them; the
# OpenAPI document states the same (relatorios/api/esquema/agendamentos.py).
NOME_MAX = 200
# Far more than a real cron needs (listing every hour and every day of the
# month one by one takes 153), and checked before croniter sees the text: its
# parse costs time in proportion to the length, and every page that shows the
# next firings parses the cron again (240 KB took seconds each time).
CRON_MAX = 200
# RFC 5321's limit on an address (notificacoes/enderecos.py holds the rule).
EMAIL_MAX = enderecos.EMAIL_MAX
# How many next firings a page or an API answer may ask for, and how far
# ahead they are looked for (a leap day's cron shows fewer).
PROXIMOS_MAX = 10
_HORIZONTE_DOS_PROXIMOS = timedelta(days=10 * 366)
# How far ahead a new cron's firings are looked at for their spacing: four
# years, so that a leap day's cron is seen too.
_JANELA_DO_INTERVALO = timedelta(days=4 * 366)

_CONTROLE = re.compile(r"[\x00-\x1f\x7f]")
# A field's R or H standing alone (not a month's or weekday's name's letter).
_ALEATORIO = re.compile(r"(?<![a-z])[rh](?![a-z])", re.IGNORECASE)


def validar_cron(expressao: Any) -> str:
    """A cron expression that fires at least once, or ErroDeParametro('cron').

    Its length is checked before anything parses it.
    """
    if not isinstance(expressao, str) or not expressao.strip():
        raise ErroDeParametro("cron", "informe uma expressão cron de cinco campos")
    if len(expressao) > CRON_MAX:
        raise ErroDeParametro(
            "cron", f"expressão cron longa demais: o máximo é {CRON_MAX} caracteres"
        )
    expressao = " ".join(expressao.split())
    campos = len(expressao.split())
    permitidos = {5, 6} if settings.RELATORIOS_CRON_SEGUNDOS else {5}
    if not expressao.startswith("@") and campos not in permitidos:
        raise ErroDeParametro(
            "cron", "a expressão cron deve ter cinco campos (min hora dia mês semana)"
        )
    if _ALEATORIO.search(expressao):
        # croniter's R (random) and H (hashed, random without an id) pick a
        # new time at each parse: the schedule would never fire when due, the
        # checker would alert that it did not, and the interval's minimum
        # could not be checked.
        raise ErroDeParametro(
            "cron", "campo aleatório (R ou H) não é permitido: informe valores fixos"
        )
    if not croniter.is_valid(expressao):
        raise ErroDeParametro("cron", f"expressão cron inválida: {expressao}")
    try:
        croniter(expressao, datetime(2000, 1, 1)).get_next(datetime)
    except (CroniterBadDateError, CroniterBadCronError):
        raise ErroDeParametro("cron", "a expressão cron nunca dispara") from None
    return expressao


def disparos_entre(
    cron: str, fuso: str, depois_de: datetime, ate: datetime, *, limite: int = 10_000
) -> list[datetime]:
    """Planned firings (aware, UTC) in (depois_de, ate], oldest first, at most
    `limite` of them (the oldest ones)."""
    tz = ZoneInfo(fuso)
    ate_local = ate.astimezone(tz).replace(tzinfo=None) + _MARGEM_LOCAL
    iterador = croniter(
        cron, depois_de.astimezone(tz).replace(tzinfo=None) - _MARGEM_LOCAL
    )
    vistos: set[datetime] = set()
    while len(vistos) < limite:
        local = iterador.get_next(datetime)
        if local > ate_local:
            break
        instante = local.replace(tzinfo=tz, fold=0).astimezone(UTC)
        if depois_de < instante <= ate:
            vistos.add(instante)
    return sorted(vistos)


def verificar_intervalo(cron: str, fuso: str, depois_de: datetime) -> None:
    """ErroDeParametro('cron') when two of the cron's next firings are closer
    than RELATORIOS_INTERVALO_MINIMO_MIN minutes (0: no minimum).

    Bounded: it looks at the firings of the next four years, and at most
    `quantos` of them. A cron fires at the same times on every day it fires,
    so if those are closer than the minimum, any 24 hours of firings shows it
    (23:55 and 00:05 on consecutive days, the first consecutive days it fires).
    `quantos` is two days' worth at the densest spacing allowed: either the
    firings looked at span three days or more, and some day in the middle is
    whole, or one day holds half of them, more than fit in a day so far apart.
    """
    minimo = settings.RELATORIOS_INTERVALO_MINIMO_MIN
    if minimo <= 0:
        return
    quantos = 2 * (24 * 60 // minimo) + 4
    disparos = disparos_entre(
        cron, fuso, depois_de, depois_de + _JANELA_DO_INTERVALO, limite=quantos
    )
    for anterior, seguinte in pairwise(disparos):
        if seguinte - anterior < timedelta(minutes=minimo):
            tz = ZoneInfo(fuso)
            raise ErroDeParametro(
                "cron",
                f"a expressão cron dispara com menos de {minimo} minutos de "
                f"intervalo (às {anterior.astimezone(tz):%H:%M} e "
                f"{seguinte.astimezone(tz):%H:%M} de "
                f"{seguinte.astimezone(tz):%d/%m/%Y}); o intervalo mínimo é "
                f"{minimo} minutos",
            )


def proximo_disparo(cron: str, fuso: str, depois_de: datetime) -> datetime:
    """The first planned firing strictly after `depois_de`."""
    janela = timedelta(days=1)
    while True:
        encontrados = disparos_entre(
            cron, fuso, depois_de, depois_de + janela, limite=1
        )
        if encontrados:
            return encontrados[0]
        janela *= 4  # a yearly cron needs a wider look; the cron is known to fire


def params_da_ocorrencia(
    agendamento: Agendamento, planejado_para: datetime, fuso: str
) -> dict[str, Any]:
    """The request a firing makes: what a manager would type for that period."""
    dia = planejado_para.astimezone(ZoneInfo(fuso)).date()
    inicio, fim = periodo_concreto(agendamento.periodo, dia)
    return {
        "inicio": inicio.isoformat(),
        "fim": fim.isoformat(),
        "agrupar": agendamento.agrupar,
        "lojas": list(agendamento.lojas or []),
    }


def criar(
    *,
    tenant_id: int,
    tipo: str,
    periodo: Any,
    cron: Any,
    prazo: Any,
    lojas: Any = None,
    agrupar: Any = None,
    destinatarios: Any = None,
    recuperacao: Any = None,
    nome: Any = "",
    entrega: Any = None,
    webhooks: Any = None,
    pular: Any = None,
    usuario_id: int | None,
) -> Agendamento:
    """Validate a schedule (errors name the field) and create it, active.

    The template is checked the way a firing will use it: the concrete
    parameters of its next firing go through the type's normalization and the
    tenant's store codes, so a schedule that could only ever be refused is a
    400 now, not an alert later. Its cron may not fire more often than
    RELATORIOS_INTERVALO_MINIMO_MIN. The tenant's
    RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT, counted under a lock on its row
    in the inserting transaction, is LimiteDoTenant.
    """
    try:
        tipo_relatorio = tipos.obter(tipo)
    except tipos.TipoDesconhecido:
        raise ErroDeParametro(
            "tipo", f"tipo de relatório desconhecido: {str(tipo)[:40]}"
        ) from None
    if periodo not in Periodo.values:
        raise ErroDeParametro(
            "periodo", f"período deve ser um de: {', '.join(Periodo.values)}"
        )
    cron = validar_cron(cron)
    prazo = _prazo(prazo)
    recuperacao = Recuperacao.ULTIMA if recuperacao is None else recuperacao
    if recuperacao not in Recuperacao.values:
        raise ErroDeParametro("recuperacao", "deve ser 'ultima' ou 'pular'")
    if not isinstance(nome, str) or len(nome) > NOME_MAX:
        raise ErroDeParametro("nome", f"texto de até {NOME_MAX} caracteres")
    if _CONTROLE.search(nome):
        # A line break in the name would break the alert email's subject.
        raise ErroDeParametro(
            "nome", "o nome não pode ter quebras de linha nem tabulações"
        )
    destinatarios = _emails(tenant_id, destinatarios)
    entrega = FormaDeEntrega.ANEXO if entrega is None else entrega
    if entrega not in FormaDeEntrega.values:
        raise ErroDeParametro(
            "entrega", f"deve ser um de: {', '.join(FormaDeEntrega.values)}"
        )
    webhooks = _webhooks_do_tenant(tenant_id, webhooks)
    pular = _pular(PularEntrega.NUNCA if pular is None else pular)
    fuso = _fuso(tenant_id)
    agora = agora_do_banco()
    primeiro = proximo_disparo(cron, fuso, agora)
    verificar_intervalo(cron, fuso, agora)
    modelo = Agendamento(
        periodo=periodo, agrupar="dia" if agrupar is None else agrupar, lojas=lojas
    )
    # The type's own rules (agrupar, lojas, period length), on a real firing.
    amostra = tipo_relatorio.normalizar(
        params_da_ocorrencia(modelo, primeiro, fuso) | {"lojas": lojas}
    )
    verificar_lojas(tenant_id=tenant_id, lojas=amostra["lojas"])
    limite = settings.RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT
    with transaction.atomic():
        # Paused schedules count too: resuming one then needs no free slot.
        reservar_vaga(
            tenant_id=tenant_id,
            existentes=Agendamento.objects.filter(
                tenant_id=tenant_id, excluido_em__isnull=True
            ),
            limite=limite,
            mensagem=f"o limite de {limite} agendamentos por empresa foi "
            "atingido: exclua um antes de criar outro",
        )
        return Agendamento.objects.create(
            tenant_id=tenant_id,
            nome=nome.strip(),
            tipo=tipo,
            periodo=periodo,
            agrupar=modelo.agrupar,
            lojas=amostra["lojas"],
            cron=cron,
            prazo=prazo,
            destinatarios=destinatarios,
            entrega=entrega,
            webhooks=webhooks,
            pular=pular,
            recuperacao=recuperacao,
            criado_por_id=usuario_id,
            ativo_desde=agora,
            verificado_ate=agora,
            proximo_disparo=primeiro,
            proxima_verificacao=primeiro + prazo,
        )


# A field an update leaves as it is.
_MANTER: Any = object()


@repetivel
def alterar_entrega(
    *,
    agendamento_id: int,
    tenant_id: int | None = None,
    destinatarios: Any = _MANTER,
    entrega: Any = _MANTER,
    webhooks: Any = _MANTER,
    pular: Any = _MANTER,
) -> Agendamento | None:
    """Change who gets a schedule's reports, how, and which it skips (None if
    it is not the tenant's, or deleted); the fields left out stay. What it
    fires and when are not changed here: that is another schedule.

    A recipient or webhook removed stops receiving from the next delivery on,
    and the download links it was sent stop opening (`notificacoes.links`
    checks the schedule's current destinations).
    """
    mudancas: dict[str, Any] = {}
    if entrega is not _MANTER:
        if entrega not in FormaDeEntrega.values:
            raise ErroDeParametro(
                "entrega", f"deve ser um de: {', '.join(FormaDeEntrega.values)}"
            )
        mudancas["entrega"] = entrega
    if pular is not _MANTER:
        mudancas["pular"] = _pular(pular)
    with transaction.atomic():
        agendamento = travar(agendamento_id, tenant_id)
        if agendamento is None or agendamento.excluido_em is not None:
            return None
        if destinatarios is not _MANTER:
            mudancas["destinatarios"] = _emails(agendamento.tenant_id, destinatarios)
        if webhooks is not _MANTER:
            mudancas["webhooks"] = _webhooks_do_tenant(agendamento.tenant_id, webhooks)
        for campo, valor in mudancas.items():
            setattr(agendamento, campo, valor)
        if mudancas:
            agendamento.save(update_fields=list(mudancas))
    return agendamento


@repetivel
def pausar(*, agendamento_id: int, tenant_id: int | None = None) -> bool:
    """Stop firing. Occurrences already due but not fired are recorded now, so
    their alerts still open at their deadlines ("paused after it was due")."""
    return _desativar(agendamento_id=agendamento_id, tenant_id=tenant_id, excluir=False)


@repetivel
def excluir(*, agendamento_id: int, tenant_id: int | None = None) -> bool:
    """Pause for good and hide it; its occurrences and alerts stay as history."""
    return _desativar(agendamento_id=agendamento_id, tenant_id=tenant_id, excluir=True)


@repetivel
def retomar(*, agendamento_id: int, tenant_id: int | None = None) -> bool:
    """Fire again from now on; what was planned while paused is not owed."""
    agendamento = travar(agendamento_id, tenant_id)
    if agendamento is None or agendamento.ativo or agendamento.excluido_em:
        return False
    agora = agora_do_banco()
    fuso = _fuso(agendamento.tenant_id)
    proximo = proximo_disparo(agendamento.cron, fuso, agora)
    Agendamento.objects.filter(pk=agendamento.pk).update(
        ativo=True,
        pausado_em=None,
        ativo_desde=agora,
        verificado_ate=agora,
        proximo_disparo=proximo,
        proxima_verificacao=proximo + agendamento.prazo,
    )
    return True


def restringir_destinatarios(
    *, tenant_id: int, dominios: list[str]
) -> dict[int, list[str]]:
    """Remove from the tenant's schedules the recipients outside `dominios`
    (its new allowed domains; empty: nothing to do); returns what was removed
    from each schedule, by id. Called when support sets the list, so that no
    stored recipient is ever outside it."""
    if not dominios:
        return {}
    removidos: dict[int, list[str]] = {}
    with transaction.atomic():
        agendamentos = (
            Agendamento.objects.select_for_update()
            .filter(tenant_id=tenant_id, excluido_em__isnull=True)
            .exclude(destinatarios=[])
            .only("id", "destinatarios")
            .order_by("pk")
        )
        for agendamento in agendamentos:
            atuais = list(agendamento.destinatarios or [])
            fora = [
                e
                for e in atuais
                if enderecos.motivo_da_recusa(e, dominios=dominios) is not None
            ]
            if fora:
                Agendamento.objects.filter(pk=agendamento.pk).update(
                    destinatarios=[e for e in atuais if e not in fora]
                )
                removidos[agendamento.pk] = fora
    if removidos:
        logger.warning(
            "destinatários fora dos domínios permitidos removidos",
            extra={"tenant_id": tenant_id, "agendamento_ids": sorted(removidos)},
        )
    return removidos


def proximos_disparos(agendamento: Agendamento, n: int = 3) -> list[datetime]:
    """The next `n` firings, at most PROXIMOS_MAX (for pages); none while paused.

    One walk of the cron after the stored next firing, within
    _HORIZONTE_DOS_PROXIMOS: the pages show these for every schedule of a
    tenant, so each costs one parse of its cron, not one per firing.
    """
    if not agendamento.ativo or agendamento.proximo_disparo is None:
        return []
    primeiro = agendamento.proximo_disparo
    seguintes = disparos_entre(
        agendamento.cron,
        agendamento.tenant.fuso_horario,
        primeiro,
        primeiro + _HORIZONTE_DOS_PROXIMOS,
        limite=min(n, PROXIMOS_MAX) - 1,
    )
    return [primeiro, *seguintes]


def _desativar(*, agendamento_id: int, tenant_id: int | None, excluir: bool) -> bool:
    """Pause (or delete) under the schedule's lock; callers are @repetivel.

    A firing that began before the lock keeps its occurrence and its job:
    recording the due occurrences waits for its uncommitted row, then leaves
    it alone (ON CONFLICT DO NOTHING). Docs: agendamentos.md, "Pausing or
    deleting while a slot fires".
    """
    agendamento = travar(agendamento_id, tenant_id)
    if agendamento is None or agendamento.excluido_em is not None:
        return False
    if not agendamento.ativo and not excluir:
        return False
    agora = agora_do_banco()
    if agendamento.ativo:
        registrar_nao_disparadas(
            agendamento, ate=agora, motivo="pausado antes de disparar"
        )
    campos: dict[str, Any] = {
        "ativo": False,
        "proximo_disparo": None,
        "proxima_verificacao": None,
    }
    if agendamento.ativo:
        campos |= {"pausado_em": agora, "verificado_ate": agora}
    if excluir:
        campos["excluido_em"] = agora
    Agendamento.objects.filter(pk=agendamento.pk).update(**campos)
    return True


def registrar_nao_disparadas(
    agendamento: Agendamento, *, ate: datetime, motivo: str, limite: int = 1000
) -> list[datetime]:
    """Rows for every occurrence planned in (verificado_ate, ate] that has none
    (nobody fired it): the checker's view of what should exist, independent of
    the firing. Returns the planned times covered (at most `limite`).
    """
    fuso = agendamento.tenant.fuso_horario
    planejados = disparos_entre(
        agendamento.cron, fuso, agendamento.verificado_ate, ate, limite=limite
    )
    if not planejados:
        return []
    with connection.cursor() as cursor:
        cursor.executemany(
            """
            INSERT INTO relatorio_ocorrencias
                   (agendamento_id, tenant_id, planejado_para, params, estado,
                    motivo, prazo_em, conferida)
            VALUES (%s, %s, %s, %s::jsonb, 'nao_disparada', %s, %s, false)
            ON CONFLICT (agendamento_id, planejado_para) DO NOTHING
            """,
            [
                (
                    agendamento.pk,
                    agendamento.tenant_id,
                    planejado,
                    json.dumps(params_da_ocorrencia(agendamento, planejado, fuso)),
                    motivo,
                    planejado + agendamento.prazo,
                )
                for planejado in planejados
            ],
        )
    return planejados


def travar(
    agendamento_id: int, tenant_id: int | None = None, *, pular_travado: bool = False
) -> Agendamento | None:
    """The schedule's row, locked until the transaction ends (None if absent,
    or with `pular_travado`, if someone else holds it).

    The lock order of everything that writes a schedule's occurrences: this
    row first, then the occurrences. FOR NO KEY UPDATE, not FOR UPDATE: an
    occurrence inserted by a firing checks its foreign key at COMMIT with FOR
    KEY SHARE on this row, which FOR UPDATE would block while we wait on that
    firing's occurrence: a deadlock (docs/agendamentos.md).
    """
    consulta = Agendamento.objects.select_for_update(
        no_key=True, skip_locked=pular_travado, of=("self",)
    ).select_related("tenant")
    if tenant_id is not None:
        consulta = consulta.filter(tenant_id=tenant_id)
    return consulta.filter(pk=agendamento_id).first()


def _fuso(tenant_id: int) -> str:
    return str(Tenant.objects.values_list("fuso_horario", flat=True).get(pk=tenant_id))


def _pular(valor: Any) -> str:
    if valor not in PularEntrega.values:
        raise ErroDeParametro(
            "pular", f"deve ser um de: {', '.join(PularEntrega.values)}"
        )
    return str(valor)


def _prazo(valor: Any) -> timedelta:
    if isinstance(valor, timedelta):
        prazo = valor
    elif isinstance(valor, int) and not isinstance(valor, bool):
        # Checked before timedelta(), which overflows on huge integers.
        if valor > PRAZO_MAX // timedelta(minutes=1):
            raise ErroDeParametro("prazo_minutos", "o prazo não pode passar de 62 dias")
        prazo = timedelta(minutes=max(valor, -1))
    else:
        raise ErroDeParametro("prazo_minutos", "informe o prazo em minutos (inteiro)")
    if prazo <= timedelta(0):
        raise ErroDeParametro("prazo_minutos", "o prazo deve ser positivo")
    if prazo > PRAZO_MAX:
        raise ErroDeParametro("prazo_minutos", "o prazo não pode passar de 62 dias")
    return prazo


def _emails(tenant_id: int, valor: Any) -> list[str]:
    """The recipients, each through notificacoes.enderecos (the tenant's
    allowed domains included), lower case, without repeats."""
    if valor is None or valor == []:
        return []
    maximo = settings.RELATORIOS_MAX_DESTINATARIOS
    if not isinstance(valor, list) or len(valor) > maximo:
        raise ErroDeParametro("destinatarios", f"lista de até {maximo} e-mails")
    dominios = enderecos.dominios_permitidos(tenant_id)
    emails: list[str] = []
    for item in valor:
        email = enderecos.validar(item, campo="destinatarios", dominios=dominios)
        if email not in emails:
            emails.append(email)
    return emails


def _webhooks_do_tenant(tenant_id: int, valor: Any) -> list[int]:
    """The ids of the tenant's active webhooks that receive
    `agendamento.entregue` for this schedule; ErroDeParametro('webhooks')
    names an id that is not one of them (another tenant's is not either)."""
    if valor is None:
        return []
    maximo = settings.RELATORIOS_MAX_WEBHOOKS_POR_TENANT
    if (
        not isinstance(valor, list)
        or len(valor) > maximo
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in valor)
    ):
        raise ErroDeParametro("webhooks", f"lista de até {maximo} ids de webhook")
    pedidos = sorted(set(valor))
    existentes = set(
        Webhook.objects.filter(
            tenant_id=tenant_id, ativo=True, pk__in=[i for i in pedidos if i > 0]
        ).values_list("id", flat=True)
    )
    desconhecidos = [i for i in pedidos if i not in existentes]
    if desconhecidos:
        raise ErroDeParametro(
            "webhooks",
            f"webhooks desconhecidos: {', '.join(map(str, desconhecidos[:10]))}",
        )
    return pedidos


def verificar_lojas(*, tenant_id: int, lojas: list[str]) -> None:
    if not lojas:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT codigo FROM erp_lojas WHERE tenant_id = %s AND codigo = ANY(%s)",
            [tenant_id, lojas],
        )
        existentes = {codigo for (codigo,) in cursor.fetchall()}
    desconhecidas = [codigo for codigo in lojas if codigo not in existentes]
    if desconhecidas:
        raise ErroDeParametro(
            "lojas", f"lojas desconhecidas: {', '.join(desconhecidas)}"
        )
