"""Email: who asked to hear of a job's end, and the text of an event's message."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.template.loader import render_to_string

from relatorios import tipos
from relatorios.apresentacao import celulas
from relatorios.models import Agendamento, Evento
from relatorios.models.cron import descrever
from relatorios.notificacoes import enderecos
from relatorios.tipos.colunas import Coluna
from relatorios.tipos.normalizacao import ErroDeParametro

logger = logging.getLogger(__name__)


def email_para_notificar(
    *, valor: Any, email_do_usuario: str | None, tenant_id: int
) -> str | None:
    """The address to notify for a request's `notificar_email`, or None.

    ErroDeParametro names `notificar_email` if it is not a boolean, or is
    true for a user without an email, or with one the recipients' rule
    (`enderecos`, with the tenant's allowed domains) refuses.
    """
    if not isinstance(valor, bool):
        raise ErroDeParametro("notificar_email", "deve ser true ou false")
    if not valor:
        return None
    email = (email_do_usuario or "").strip()
    if not email:
        raise ErroDeParametro(
            "notificar_email", "seu usuário não tem um e-mail cadastrado"
        )
    motivo = enderecos.motivo_da_recusa(
        email, dominios=enderecos.dominios_permitidos(tenant_id)
    )
    if motivo is not None:
        raise ErroDeParametro(
            "notificar_email",
            f"o e-mail cadastrado no seu usuário não pode receber avisos: {motivo}",
        )
    return email


def inscrever(*, job_id: int, email: str) -> bool:
    """Ask for one email when the job ends; False if already subscribed.

    Call it for a pending or running job. If the job ends between the
    request's read and this insert, the sweep (`varrer`) sends the email.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO relatorio_inscricoes (job_id, email) VALUES (%s, %s)
            ON CONFLICT (job_id, email) DO NOTHING
            """,
            [job_id, email],
        )
        return cursor.rowcount == 1


def mensagem_de_email(payload: Mapping[str, Any]) -> tuple[str, str]:
    """Subject and plain-text body (pt-BR) of an event's email."""
    evento, dados = payload["type"], payload["data"]
    base = settings.RELATORIOS_URL_BASE
    if evento in (Evento.JOB_PRONTO, Evento.JOB_FALHOU):
        titulo = _titulo(dados["tipo"])
        pagina = f"{base}/painel/jobs/{dados['id']}/"
        if evento == Evento.JOB_PRONTO:
            return (
                f"Relatório pronto: {titulo} (#{dados['id']})",
                f"O relatório {titulo} (#{dados['id']}) está pronto.\n\n"
                f"Veja o resultado em: {pagina}\n",
            )
        return (
            f"Relatório não concluído: {titulo} (#{dados['id']})",
            f"O relatório {titulo} (#{dados['id']}) não pôde ser gerado.\n\n"
            f"Motivo: {dados.get('erro') or 'erro desconhecido'}\n\n"
            f"Você pode pedir de novo em: {pagina}\n",
        )
    nome = _nome_do_agendamento(dados["agendamento"])
    fuso = dados.get("fuso_horario") or "UTC"
    if evento == Evento.ALERTA_ABERTO:
        agendamento_id = dados["agendamento"]["id"]
        quando = _quando([agendamento_id], fuso).get(agendamento_id)
        return (
            f"Alerta: o relatório agendado {nome} não ficou pronto no prazo",
            f"O relatório agendado {nome} ({_titulo(dados['tipo'])}), planejado "
            f"para {_legivel(dados['planejado_para'], fuso)}, não ficou pronto até "
            f"{_legivel(dados['prazo_em'], fuso)}.\n\nMotivo: {dados['motivo']}\n"
            + (f"Agendamento: {quando}\n" if quando else ""),
        )
    return (
        f"Alerta encerrado: {nome}",
        f"O alerta do relatório agendado {nome} foi encerrado.\n",
    )


@dataclass(frozen=True)
class Email:
    """A message's subject, text and (for the richer ones) HTML, in pt-BR."""

    assunto: str
    texto: str
    html: str | None = None


def email_do_evento(payload: Mapping[str, Any], *, anexo: str = "") -> Email:
    """The email of an event; `anexo`, the attached file's name, if any."""
    evento, dados = payload["type"], payload["data"]
    if evento == Evento.AGENDAMENTO_ENTREGUE:
        return _agendamento_entregue(dados, anexo)
    if evento == Evento.ALERTAS_RESUMO:
        return _resumo_de_alertas(dados)
    assunto, texto = mensagem_de_email(payload)
    return Email(assunto, texto)


@dataclass(frozen=True)
class Resumo:
    """An event told in a few lines, for a chat message: a title, the
    facts as (label, value), and the link to act on, if any."""

    titulo: str
    campos: list[tuple[str, str]]
    link: tuple[str, str] | None = None


def resumo_do_evento(payload: Mapping[str, Any]) -> Resumo:
    """The event in a few lines (pt-BR), from the same helpers as its email.
    A chat never carries the file: a scheduled report's gets its link (when
    RELATORIOS_URL_BASE makes it absolute: a chat cannot open a path)."""
    resumo = _resumo(payload)
    if resumo.link is not None and not resumo.link[1].startswith("http"):
        return Resumo(resumo.titulo, resumo.campos)
    return resumo


def _resumo(payload: Mapping[str, Any]) -> Resumo:
    evento, dados = payload["type"], payload["data"]
    base = settings.RELATORIOS_URL_BASE
    fuso = dados.get("fuso_horario") or "UTC"
    if evento == Evento.AGENDAMENTO_ENTREGUE:
        periodo = dados.get("periodo") or {}
        return Resumo(
            f"Relatório agendado pronto: {_nome_do_agendamento(dados['agendamento'])}",
            [
                ("Relatório", _titulo(dados["tipo"])),
                ("Período", _periodo(periodo.get("inicio"), periodo.get("fim"))),
                *_totais(dados["tipo"], dados.get("totais") or {}),
            ],
            ("Baixar a planilha", dados["download"]["url"]),
        )
    if evento in (Evento.ALERTA_ABERTO, Evento.ALERTA_FECHADO):
        nome = _nome_do_agendamento(dados["agendamento"])
        campos = [
            ("Relatório", _titulo(dados["tipo"])),
            ("Planejado para", _legivel(dados["planejado_para"], fuso)),
            ("Prazo", _legivel(dados["prazo_em"], fuso)),
        ]
        if evento == Evento.ALERTA_ABERTO:
            return Resumo(
                f"Alerta: {nome} não ficou pronto no prazo",
                [*campos, ("Motivo", str(dados["motivo"]))],
                ("Ver os agendamentos", f"{base}/painel/agendamentos/"),
            )
        return Resumo(f"Alerta encerrado: {nome}", campos)
    assunto, _ = mensagem_de_email(payload)
    campos = [("Relatório", _titulo(dados["tipo"]))]
    if dados.get("erro"):
        campos.append(("Motivo", str(dados["erro"])))
    return Resumo(
        assunto, campos, ("Ver o relatório", f"{base}/painel/jobs/{dados['id']}/")
    )


def _agendamento_entregue(dados: Mapping[str, Any], anexo: str) -> Email:
    fuso = dados.get("fuso_horario") or "UTC"
    tipo = dados["tipo"]
    nome = (
        dados["agendamento"].get("nome") or f"agendamento {dados['agendamento']['id']}"
    )
    periodo = dados.get("periodo") or {}
    contexto = {
        "nome": nome,
        "titulo": _titulo(tipo),
        "periodo": _periodo(periodo.get("inicio"), periodo.get("fim")),
        "planejado": _legivel(dados["ocorrencia"]["planejado_para"], fuso),
        "quando": _quando([dados["agendamento"]["id"]], fuso).get(
            dados["agendamento"]["id"], ""
        ),
        "totais": _totais(tipo, dados.get("totais") or {}),
        "anexo": anexo,
        "anexar": dados.get("anexar", False),
        "link": dados["download"]["url"],
        "link_expira": _legivel(dados["download"]["expira_em"], fuso),
        "pagina": dados["job"]["pagina"],
    }
    return Email(
        f"Relatório agendado pronto: {contexto['nome']} ({contexto['periodo']})",
        render_to_string("emails/agendamento_entregue.txt", contexto),
        render_to_string("emails/agendamento_entregue.html", contexto),
    )


def _resumo_de_alertas(dados: Mapping[str, Any]) -> Email:
    fuso = dados.get("fuso_horario") or "UTC"
    quando = _quando([a["agendamento"]["id"] for a in dados["alertas"]], fuso)
    alertas = [
        {
            "nome": _nome_do_agendamento(a["agendamento"]),
            "quando": quando.get(a["agendamento"]["id"], ""),
            "titulo": _titulo(a["tipo"]),
            "planejado": _legivel(a["planejado_para"], fuso),
            "prazo": _legivel(a["prazo_em"], fuso),
            "motivo": a["motivo"],
        }
        for a in dados["alertas"]
    ]
    contexto = {
        "alertas": alertas,
        "painel": f"{settings.RELATORIOS_URL_BASE}/painel/agendamentos/",
    }
    return Email(
        f"Resumo: {len(alertas)} relatórios agendados não ficaram prontos no prazo",
        render_to_string("emails/alertas_resumo.txt", contexto),
        render_to_string("emails/alertas_resumo.html", contexto),
    )


def _totais(tipo: str, totais: Mapping[str, Any]) -> list[tuple[str, str]]:
    # The table's own columns and formats: what the page's totals row shows.
    return [
        (coluna.titulo, celulas.na_pagina(coluna, totais[coluna.campo]))
        for coluna in celulas.colunas(tipo, None)
        if coluna.numerica and coluna.campo in totais
    ]


def _periodo(inicio: Any, fim: Any) -> str:
    coluna = Coluna("periodo", "Período", "periodo")
    if not inicio or not fim:
        return "—"
    de, ate = (
        celulas.na_pagina(coluna, inicio),
        celulas.na_pagina(coluna, fim),
    )
    return de if de == ate else f"{de} a {ate}"


def _nome_do_agendamento(agendamento: Mapping[str, Any]) -> str:
    # One line: a name stored before names refused line breaks would
    # otherwise fail every send (BadHeaderError) of an email naming it.
    nome = " ".join(str(agendamento.get("nome") or "").split())
    return nome or f"agendamento {agendamento['id']}"


def _quando(agendamento_ids: list[int], fuso: str) -> dict[int, str]:
    """Each schedule's cron in words with its next firing, read at send time
    (a cron never changes; the next firing is the one still ahead then)."""
    return {
        pk: descrever(cron, fuso, proximo)
        for pk, cron, proximo in Agendamento.objects.filter(
            pk__in=agendamento_ids
        ).values_list("pk", "cron", "proximo_disparo")
    }


def _legivel(iso: str, fuso: str) -> str:
    # On the tenant's clock, as the schedule's cron and deadline are.
    instante = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return f"{instante.astimezone(ZoneInfo(fuso)):%d/%m/%Y %H:%M} ({fuso})"


def _titulo(tipo: str) -> str:
    try:
        return tipos.obter(tipo).titulo
    except tipos.TipoDesconhecido:
        return tipo
