"""B11's month: the calendar of a chain's requests, the ERP that grows every
night, and the simulated clock (bench/b11_mes.py drives them).

Everything here is a pure function of the seed and the day, so the two runs
of one `make bench` (everything off, everything on) replay exactly the same
month against identical copies of the same data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg

# The simulated month, and the first day of the ERP's history (a year
# before it: the 12-month reports read all of it).
MES = date(2026, 6, 1)
HISTORIA_DESDE = date(2025, 6, 1)
# Managers ask at 08:00 and the ERP's nightly load ends at 02:00, São Paulo
# time (UTC-3, criar_tenant's default zone); computing ahead runs at 06:00.
NOITE_UTC = 5
ANTECIPACAO_UTC = 9
MANHA_UTC = 11
# Twenty managers click the same report ("twenty of them clicking").
CLIQUES_DO_MESMO = 20


@dataclass(frozen=True)
class Pedido:
    """One report a manager asks for, and how many click it at once."""

    nome: str
    tipo: str
    params: dict[str, Any]
    cliques: int = 1


@dataclass(frozen=True)
class Dia:
    """A simulated day: its date, whether it is measured, what is asked."""

    data: date
    medido: bool
    pedidos: list[Pedido] = field(default_factory=list)

    def instante(self, hora_utc: int) -> datetime:
        return datetime(
            self.data.year, self.data.month, self.data.day, hora_utc, tzinfo=UTC
        )


def _mes_anterior(dia: date) -> tuple[date, date]:
    fim = dia.replace(day=1) - timedelta(days=1)
    return fim.replace(day=1), fim


def _vendas(inicio: date, fim: date, agrupar: str, lojas: list[str]) -> dict[str, Any]:
    return {
        "inicio": inicio.isoformat(),
        "fim": fim.isoformat(),
        "agrupar": agrupar,
        "lojas": lojas,
    }


def pedidos_do_dia(
    dia: date, lojas: list[str], *, gerentes: int, avulsos: int, semente: int
) -> list[Pedido]:
    """What a chain asks on `dia`.

    Every morning: yesterday's sales (twenty managers click it) and each
    store manager's own yesterday; Mondays: last week's sales and
    commissions; on the 1st: the monthly close and last month's sales by
    day; and `avulsos` ad-hoc ranges drawn from the seed: month to date, year
    to date, the last 12 months, a recent week, commissions so far.
    """
    ontem = dia - timedelta(days=1)
    pedidos = [
        Pedido("ontem", "vendas", _vendas(ontem, ontem, "dia", []), CLIQUES_DO_MESMO)
    ]
    for loja in lojas[:gerentes]:
        pedidos.append(
            Pedido(f"ontem {loja}", "vendas", _vendas(ontem, ontem, "dia", [loja]))
        )
    if dia.weekday() == 0:
        semana = (dia - timedelta(days=7), ontem)
        pedidos.append(Pedido("semana", "vendas", _vendas(*semana, "dia", [])))
        pedidos.append(
            Pedido("semana comissoes", "comissoes", _vendas(*semana, "dia", []))
        )
    if dia.day == 1:
        inicio, fim = _mes_anterior(dia)
        pedidos.append(
            Pedido("fechamento", "fechamento", {"inicio": str(inicio), "fim": str(fim)})
        )
        pedidos.append(Pedido("mes", "vendas", _vendas(inicio, fim, "dia", [])))
    sorte = random.Random(f"{semente}:{dia.isoformat()}:avulsos")
    for n in range(avulsos):
        pedidos.append(_avulso(n, dia, ontem, lojas, sorte))
    return pedidos


def _avulso(
    n: int, dia: date, ontem: date, lojas: list[str], sorte: random.Random
) -> Pedido:
    forma = sorte.choice(["mes", "ano", "12meses", "12meses", "semana", "comissoes"])
    loja = [sorte.choice(lojas)] if sorte.random() < 0.3 else []
    if forma == "mes":
        params = _vendas(ontem.replace(day=1), ontem, "dia", loja)
    elif forma == "ano":
        params = _vendas(ontem.replace(month=1, day=1), ontem, "mes", loja)
    elif forma == "12meses":
        params = _vendas(ontem - timedelta(days=364), ontem, "mes", loja)
    elif forma == "semana":
        fim = ontem - timedelta(days=sorte.randint(0, 30))
        params = _vendas(fim - timedelta(days=6), fim, "dia", loja)
    else:
        params = _vendas(ontem.replace(day=1), ontem, "mes", loja)
    tipo = "comissoes" if forma == "comissoes" else "vendas"
    return Pedido(f"avulso {n} {forma}", tipo, params)


def calendario(
    *, medidos: int, aquecimento: int, lojas: list[str], gerentes: int, avulsos: int
) -> list[Dia]:
    """The warm-up (unmeasured: the request history the predictor learns
    from: the 1st of the two months before, and the `aquecimento` days just
    before the month, with only the patterned requests), then the measured
    days from the 1st of the month."""
    dias: list[Dia] = []
    anterior = _mes_anterior(MES)[0]
    anteriores = [_mes_anterior(anterior)[0], anterior]
    anteriores += [MES - timedelta(days=d) for d in range(aquecimento, 0, -1)]
    for data in anteriores:
        pedidos = pedidos_do_dia(data, lojas, gerentes=gerentes, avulsos=0, semente=0)
        # One click is enough for the history: the same request is one job.
        dias.append(
            Dia(data, False, [Pedido(p.nome, p.tipo, p.params) for p in pedidos])
        )
    for d in range(medidos):
        data = MES + timedelta(days=d)
        dias.append(
            Dia(
                data,
                True,
                pedidos_do_dia(
                    data, lojas, gerentes=gerentes, avulsos=avulsos, semente=11
                ),
            )
        )
    return dias


# --- the ERP's nightly load -------------------------------------------------------


@dataclass(frozen=True)
class Cadastro:
    """A tenant's stores, sellers, products and prices (gerar_dados's arrays)."""

    tenant_id: int
    lojas: list[int]
    vendedores: list[int]
    produtos: list[int]
    precos: list[Any]
    fuso: str


def cadastro(conexao: psycopg.Connection[Any], tenant_id: int) -> Cadastro:
    def ids(sql: str) -> list[Any]:
        return [linha[0] for linha in conexao.execute(sql, [tenant_id]).fetchall()]

    fuso = conexao.execute(
        "SELECT fuso_horario FROM tenants WHERE id = %s", [tenant_id]
    ).fetchone()
    return Cadastro(
        tenant_id=tenant_id,
        lojas=ids("SELECT id FROM erp_lojas WHERE tenant_id = %s ORDER BY codigo"),
        vendedores=ids(
            "SELECT id FROM erp_vendedores WHERE tenant_id = %s ORDER BY id"
        ),
        produtos=ids("SELECT id FROM erp_produtos WHERE tenant_id = %s ORDER BY id"),
        precos=ids("SELECT preco FROM erp_produtos WHERE tenant_id = %s ORDER BY id"),
        fuso=fuso[0] if fuso else "America/Sao_Paulo",
    )


# A sale is in [day 00:00, next day 00:00) of the tenant's zone.
_DO_DIA = """
    data_hora >= (%(dia)s::date)::timestamp AT TIME ZONE %(fuso)s
    AND data_hora < (%(dia)s::date + 1)::timestamp AT TIME ZONE %(fuso)s
"""
# One sale in 33 of the day comes back within the hour: chosen by its rank in
# a stable order, not by random(), whose draws would follow the plan.
_DEVOLUCOES = f"""
    INSERT INTO erp_devolucoes
           (tenant_id, loja_id, venda_id, data_hora, quantidade, valor)
    SELECT v.tenant_id, v.loja_id, v.id, v.data_hora + interval '1 hour',
           1, round(v.valor / v.quantidade, 2)
      FROM (SELECT *, row_number() OVER (ORDER BY data_hora, id) AS n
              FROM erp_vendas
             WHERE tenant_id = %(tenant)s AND {_DO_DIA}) AS v
     WHERE v.n %% 33 = 0
"""
# The n-th sales of a past month, in a stable order (the same rows in both
# runs' copies of the data).
_ESCOLHIDAS = """
    SELECT id FROM erp_vendas
     WHERE tenant_id = %(tenant)s
       AND data_hora >= (%(de)s::date)::timestamp AT TIME ZONE %(fuso)s
       AND data_hora < (%(ate)s::date)::timestamp AT TIME ZONE %(fuso)s
     ORDER BY data_hora, id OFFSET %(pular)s LIMIT %(quantas)s
"""


def carga_da_noite(
    conexao: psycopg.Connection[Any],
    c: Cadastro,
    dia: date,
    *,
    vendas_por_dia: int,
    semente: int,
) -> int:
    """The ERP's nightly load before `dia`: yesterday's sales, returns and
    stock movements, and late corrections to a past month (revalued and
    deleted sales, a sale moved to the month before, one moved to another
    store). One transaction; returns the rows written."""
    from relatorios.management.commands.gerar_dados import (
        SQL_MOVIMENTOS,
        SQL_VENDAS,
        VENDEDORES_POR_LOJA,
    )

    ontem = dia - timedelta(days=1)
    sorte = random.Random(f"{semente}:{dia.isoformat()}")
    comuns = {
        "tenant": c.tenant_id,
        "lojas": c.lojas,
        "vendedores": c.vendedores,
        "produtos": c.produtos,
        "precos": c.precos,
        "nl": len(c.lojas),
        "np": len(c.produtos),
        "vpl": VENDEDORES_POR_LOJA,
        "inicio": ontem,
        "dias": 1,
        "fuso": c.fuso,
        "dia": ontem,
    }
    escritas = 0
    with conexao.transaction():
        conexao.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        conexao.execute("SELECT setseed(%s)", [sorte.uniform(-1, 1)])
        escritas += conexao.execute(
            SQL_VENDAS, {**comuns, "n": vendas_por_dia}
        ).rowcount
        escritas += conexao.execute(_DEVOLUCOES, comuns).rowcount
        escritas += conexao.execute(
            SQL_MOVIMENTOS, {**comuns, "n": max(1, vendas_por_dia // 5)}
        ).rowcount
        # A past month of the history (or this one, before yesterday).
        de = date(dia.year, dia.month, 1) - timedelta(days=30 * sorte.randint(0, 11))
        de = de.replace(day=1)
        ate = (de + timedelta(days=32)).replace(day=1)
        escolha = {**comuns, "de": de, "ate": min(ate, ontem)}

        def linhas(quantas: int) -> str:
            escolha["pular"] = sorte.randint(0, 200)
            escolha["quantas"] = quantas
            return _ESCOLHIDAS

        escritas += conexao.execute(
            f"UPDATE erp_vendas SET valor = round(valor * 0.95, 2)"
            f" WHERE id IN ({linhas(5)})",
            escolha,
        ).rowcount
        apagar = linhas(1)
        conexao.execute(
            f"DELETE FROM erp_devolucoes WHERE venda_id IN ({apagar})", escolha
        )
        escritas += conexao.execute(
            f"DELETE FROM erp_vendas WHERE id IN ({apagar})", escolha
        ).rowcount
        escritas += conexao.execute(
            f"UPDATE erp_vendas SET data_hora = data_hora - interval '31 days'"
            f" WHERE id IN ({linhas(1)})",
            escolha,
        ).rowcount
        escolha["outra"] = c.lojas[sorte.randrange(len(c.lojas))]
        escritas += conexao.execute(
            f"UPDATE erp_vendas SET loja_id = %(outra)s WHERE id IN ({linhas(1)})",
            escolha,
        ).rowcount
    return escritas


# --- the simulated clock ------------------------------------------------------------


def viver_o_dia_em(
    conexao: psycopg.Connection[Any], *, desde: datetime, instante: datetime
) -> int:
    """Moves the jobs created (or restarted) since `desde` (real time) back to
    the simulated `instante`: their request history reads as a month, and
    their results expire when they would have in that month.

    The one place that knows how the request history is kept. The predictor
    of computing ahead (relatorios.jobs.antecipacao) reads it from
    `relatorio_jobs.pedido_em` (set to the real now() by a person's submit,
    or by the first request a job computed ahead answers), so that moves
    too; `antecipado_em` is already simulated when the pass ran with
    `agora=` (before `desde`), real otherwise. Stored chunks are not moved:
    they are valid by their data's versions, not by the clock, but a
    retention by age would see them as minutes old.
    """
    return conexao.execute(
        """
        WITH deslocamento AS (SELECT now() - %(instante)s AS d)
        UPDATE relatorio_jobs
           SET criado_em = criado_em - d,
               iniciado_em = iniciado_em - d,
               heartbeat_em = heartbeat_em - d,
               concluido_em = concluido_em - d,
               expira_em = expira_em - d,
               pedido_em = CASE WHEN pedido_em >= %(desde)s
                                THEN pedido_em - d ELSE pedido_em END,
               antecipado_em = CASE WHEN antecipado_em >= %(desde)s
                                    THEN antecipado_em - d ELSE antecipado_em END
          FROM deslocamento
         WHERE criado_em >= %(desde)s
        """,
        {"desde": desde, "instante": instante},
    ).rowcount
