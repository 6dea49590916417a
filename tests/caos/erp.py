"""The ERP under the soak (issue 34): writers that change the data the reports
read, clients asking for those reports, and the invariant that no result
differs from a full recomputation.

- `escrever` (load driver): for the first `FRACAO_DE_ESCRITA` of the load,
  one small transaction every 0.05-0.3 s on the harness's own connection
  (never a fault's target): a late sale into a past month, a correction, a
  deletion (with its returns), a sale moved to another month, to another
  store or to another tenant, a return, a stock movement. Then it stops for
  good and records when (`RegistroDoErp.parou_em`, after its last commit
  returned).
- `pedir` (load driver): the product's report types over the months the
  data covers, ranges mostly on month boundaries (so that, with chunk reuse,
  their month chunks are shared), random stores, through the real HTTP API,
  for the whole load: before the writers stop (chunks stored, then made
  stale by later writes) and after (jobs that must not trust them).
- `recomputacao` (invariant): every `pronto` job of those types created
  after the writers stopped is recomputed in this process, chunk reuse off,
  and compared, canonical JSON text against canonical JSON text.

Why it is exact: a job's `criado_em` is the start of the statement that
created (or restarted) it, so every attempt of that job, and every chunk
it computed itself or resumed from its own checkpoint, started after the
writers' last commit, and read the data as it still is (replica reads wait
for the primary's position at the attempt's start: relatorios/banco/
replica.py). The recomputation reads that same data. So without reuse the
two are equal by construction, and a difference can only come from
something the job trusted from before: a stored chunk whose data changed
since, the stale number this invariant exists to catch. Jobs created while
the writers ran are not judged: nothing fixes the data they saw.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from tests.caos.carga import Soak
    from tests.caos.invariantes import Colheita, Figura

# The writers run for this share of the load; what follows is the window of
# jobs the invariant can judge.
FRACAO_DE_ESCRITA = 0.7
# At most this many jobs are recomputed (the oldest first after the writers
# stopped): the check's cost stays bounded in a long run.
LIMITE_DE_RECOMPUTACOES = 200
# The months gerar_dados filled (implantacao.preparar_dados).
MESES = range(1, 7)
ANO = 2026


@dataclass
class RegistroDoErp:
    """What the ERP drivers did, for the invariant and the report."""

    escritas: Counter[str] = field(default_factory=Counter)
    # Epoch seconds after the last write committed; None while writing.
    parou_em: float | None = None
    trava: threading.Lock = field(default_factory=threading.Lock)


def tipos_do_erp() -> list[str]:
    """The product's report types (the test types are not judged: the
    ledger's has side effects, the others read nothing of the ERP)."""
    from relatorios import tipos

    return sorted(
        nome
        for nome, tipo in tipos.registro().items()
        if type(tipo).__module__.startswith("relatorios.")
    )


# --- the writers ---------------------------------------------------------------------


@dataclass(frozen=True)
class Cadastro:
    tenant: int
    lojas: list[int]
    vendedores: list[int]
    produtos: list[int]
    primeira: int
    ultima: int


def cadastros(conexao: psycopg.Connection[Any], tenants: list[int]) -> list[Cadastro]:
    cadastros = []
    for tenant in tenants:

        def ids(tabela: str, t: int = tenant) -> list[int]:
            return [
                int(i)
                for (i,) in conexao.execute(
                    f"SELECT id FROM {tabela} WHERE tenant_id = %s ORDER BY id", [t]
                ).fetchall()
            ]

        limites = conexao.execute(
            "SELECT min(id), max(id) FROM erp_vendas WHERE tenant_id = %s", [tenant]
        ).fetchone()
        assert limites is not None
        cadastros.append(
            Cadastro(
                tenant,
                ids("erp_lojas"),
                ids("erp_vendedores"),
                ids("erp_produtos"),
                int(limites[0] or 0),
                int(limites[1] or 0),
            )
        )
    return cadastros


_UMA_VENDA = """
    SELECT id, loja_id FROM erp_vendas
     WHERE tenant_id = %s AND id >= %s ORDER BY id LIMIT 1
"""


def escrever_uma(
    conexao: psycopg.Connection[Any],
    sorte: random.Random,
    c: Cadastro,
    outro: Cadastro,
) -> str:
    """One ERP write of a kind drawn from `sorte`, in its own transaction;
    returns the kind ('' when the drawn row was gone)."""
    tipo = sorte.choices(
        [
            "venda_atrasada",
            "correcao",
            "exclusao",
            "outro_mes",
            "outra_loja",
            "outro_tenant",
            "devolucao",
            "movimento",
        ],
        weights=[20, 25, 10, 15, 10, 5, 10, 5],
    )[0]
    dia = date(ANO, 1, 1) + timedelta(days=sorte.randrange(181))
    with conexao.transaction():
        if tipo == "venda_atrasada":
            conexao.execute(
                "INSERT INTO erp_vendas (tenant_id, loja_id, vendedor_id, produto_id,"
                " data_hora, quantidade, valor) VALUES (%s, %s, %s, %s,"
                " %s::date + make_interval(hours => %s), %s, %s)",
                [
                    c.tenant,
                    sorte.choice(c.lojas),
                    sorte.choice(c.vendedores),
                    sorte.choice(c.produtos),
                    dia,
                    sorte.randint(10, 20),
                    sorte.randint(1, 5),
                    f"{sorte.randint(500, 90000) / 100:.2f}",
                ],
            )
            return tipo
        if tipo == "movimento":
            conexao.execute(
                "INSERT INTO erp_movimentos_estoque"
                " (tenant_id, loja_id, produto_id, data, quantidade)"
                " VALUES (%s, %s, %s, %s, %s)",
                [
                    c.tenant,
                    sorte.choice(c.lojas),
                    sorte.choice(c.produtos),
                    dia,
                    sorte.choice([-3, -1, 5, 20]),
                ],
            )
            return tipo
        venda = conexao.execute(
            _UMA_VENDA, [c.tenant, sorte.randint(c.primeira, max(c.primeira, c.ultima))]
        ).fetchone()
        if venda is None:
            return ""
        venda_id, loja_id = venda
        if tipo == "correcao":
            conexao.execute(
                "UPDATE erp_vendas SET valor = valor + %s, quantidade = quantidade + 1"
                " WHERE id = %s",
                [f"{sorte.randint(1, 5000) / 100:.2f}", venda_id],
            )
        elif tipo == "exclusao":
            conexao.execute(
                "DELETE FROM erp_devolucoes WHERE venda_id = %s", [venda_id]
            )
            conexao.execute("DELETE FROM erp_vendas WHERE id = %s", [venda_id])
        elif tipo == "outro_mes":
            dias = sorte.choice([-1, 1]) * sorte.randint(20, 40)
            conexao.execute(
                "UPDATE erp_vendas"
                " SET data_hora = data_hora + make_interval(days => %s) WHERE id = %s",
                [dias, venda_id],
            )
        elif tipo == "outra_loja":
            conexao.execute(
                "UPDATE erp_vendas SET loja_id = %s WHERE id = %s",
                [
                    sorte.choice([x for x in c.lojas if x != loja_id] or c.lojas),
                    venda_id,
                ],
            )
        elif tipo == "outro_tenant":
            # A sale with returns stays: its returns would point across tenants.
            conexao.execute(
                "UPDATE erp_vendas SET tenant_id = %s, loja_id = %s, vendedor_id = %s,"
                " produto_id = %s WHERE id = %s AND NOT EXISTS"
                " (SELECT 1 FROM erp_devolucoes d WHERE d.venda_id = %s)",
                [
                    outro.tenant,
                    sorte.choice(outro.lojas),
                    sorte.choice(outro.vendedores),
                    sorte.choice(outro.produtos),
                    venda_id,
                    venda_id,
                ],
            )
        else:  # devolucao
            conexao.execute(
                "INSERT INTO erp_devolucoes"
                " (tenant_id, loja_id, venda_id, data_hora, quantidade, valor)"
                " SELECT tenant_id, loja_id, id, data_hora + interval '2 days', 1,"
                " round(valor / quantidade, 2) FROM erp_vendas WHERE id = %s",
                [venda_id],
            )
    return tipo


def escrever(soak: Soak, sorte: random.Random, parar: threading.Event) -> None:
    registro = soak.erp
    fim = time.time() + FRACAO_DE_ESCRITA * soak.impl.p.duracao_s
    try:
        with soak.impl.conectar() as conexao:
            todos = cadastros(conexao, [t.id for t in soak.impl.tenants])
            while time.time() < fim and not parar.wait(sorte.uniform(0.05, 0.3)):
                c = sorte.choice(todos)
                outro = sorte.choice([x for x in todos if x is not c] or [c])
                tipo = escrever_uma(conexao, sorte, c, outro)
                if tipo:
                    with registro.trava:
                        registro.escritas[tipo] += 1
    finally:
        # After the last commit returned (or the driver failed): no write of
        # ours can be in flight from here on.
        registro.parou_em = time.time()


# --- the readers ---------------------------------------------------------------------


def periodo(tipo: str, sorte: random.Random) -> tuple[date, date]:
    """Mostly whole months (shared month chunks), sometimes cut inside one."""
    m1 = sorte.choice(MESES)
    m2 = m1 if tipo == "fechamento" else min(max(MESES), m1 + sorte.randint(0, 3))
    inicio = date(ANO, m1, 1)
    fim = (date(ANO, m2, 28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    if tipo != "fechamento":
        if sorte.random() < 0.3:
            inicio += timedelta(days=sorte.randint(1, 20))
        if sorte.random() < 0.3:
            fim -= timedelta(days=sorte.randint(1, 7))
    return inicio, max(inicio, fim)


def pedir(soak: Soak, sorte: random.Random, parar: threading.Event) -> None:
    """The product's reports over the ERP's data, asked by the tenants that
    are not at their pending cap all the time."""
    tenants = [t for t in soak.impl.tenants if not t.pesado]
    tipos = tipos_do_erp()
    lojas = ["L001", "L002", "L003", "L004"]
    while not parar.wait(sorte.uniform(0.2, 0.6)):
        tenant = sorte.choice(tenants)
        tipo = sorte.choice(tipos)
        inicio, fim = periodo(tipo, sorte)
        corpo = {
            "inicio": inicio.isoformat(),
            "fim": fim.isoformat(),
            "agrupar": sorte.choice(["dia", "mes"]),
            "lojas": sorted(sorte.sample(lojas, sorte.randint(0, 3))),
        }
        status, resposta = soak.chamar(
            "erp",
            "POST",
            f"/relatorios/{tipo}",
            sorte=sorte,
            token=tenant.tokens[0],
            corpo=corpo,
        )
        if status in (200, 202) and isinstance(resposta, dict):
            with soak.trava:
                soak.jobs.setdefault(tenant.id, []).append(int(resposta["id"]))


# --- the invariant -------------------------------------------------------------------


def canonico(resultado: Any) -> str:
    """A result as the comparison reads it: keys sorted, no spaces."""
    return json.dumps(
        resultado, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def recalcular(*, tipo: str, tenant_id: int, fuso: str, params: dict[str, Any]) -> Any:
    """The report computed from scratch in this process, on the primary, with
    chunk reuse off, through the same JSON encoding `ciclo.concluir` stores."""
    from django.core.serializers.json import DjangoJSONEncoder
    from django.test import override_settings

    from relatorios import tipos
    from relatorios.jobs import execucao
    from relatorios.tipos.base import Contexto

    tipo_relatorio = tipos.obter(tipo)
    ctx = Contexto(job_id=0, tenant_id=tenant_id, fuso_horario=fuso)
    with override_settings(RELATORIOS_REUSO_PARTES=False):
        resultado = execucao.calcular(
            tipo_relatorio, ctx, params, timeout_s=tipo_relatorio.timeout()
        )
    return json.loads(json.dumps(resultado, cls=DjangoJSONEncoder))


def recomputacao(c: Colheita) -> list[Figura]:
    from tests.caos.invariantes import figura

    registro = c.soak.erp
    desde = registro.parou_em if registro.parou_em is not None else c.marcos.fim_carga
    jobs = c.linhas(
        "SELECT j.id, j.tipo, j.tenant_id, t.fuso_horario, j.params, j.resultado"
        "  FROM relatorio_jobs j JOIN tenants t ON t.id = j.tenant_id"
        " WHERE j.status = 'pronto' AND j.tipo = ANY(%s)"
        "   AND j.criado_em > to_timestamp(%s)"
        " ORDER BY j.id LIMIT %s",
        [tipos_do_erp(), desde, LIMITE_DE_RECOMPUTACOES],
    )
    diferentes = []
    for job_id, tipo, tenant_id, fuso, params, resultado in jobs:
        novo = recalcular(tipo=tipo, tenant_id=tenant_id, fuso=fuso, params=params)
        if canonico(resultado) != canonico(novo):
            diferentes.append(f"job {job_id} ({tipo} {json.dumps(params)})")
    escritas = sum(registro.escritas.values())
    tipos_escritos = ", ".join(f"{k} {n}" for k, n in sorted(registro.escritas.items()))
    return [
        figura(
            "resultado_diferente_da_recomputacao",
            diferentes,
            "every pronto report created after the ERP writers stopped equals a"
            " full recomputation with chunk reuse off, byte for byte"
            f" ({len(jobs)} compared; {escritas} ERP writes before: {tipos_escritos})",
        ),
        figura(
            "recomputacao_sem_amostra",
            [] if jobs else ["no report of the ERP's types created after the writers"],
            "the check above judged at least one report",
        ),
    ]
