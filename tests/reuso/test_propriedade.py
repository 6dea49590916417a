"""Property: with reuse on, every result is the same JSON text as a full
recomputation with reuse off, whatever ERP writes came between requests."""

from __future__ import annotations

import calendar
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relatorios.models import Loja, Produto, Tenant, Vendedor
from tests.reuso.comum import contando, relatorio, sem_reuso

pytestmark = pytest.mark.django_db(transaction=True)

# Two zones on either side of UTC: chunks straddle UTC months both ways.
FUSOS = ("America/Sao_Paulo", "Asia/Tokyo")
LOJAS = 3


def mundo() -> list[Tenant]:
    """Two tenants with stores (codes unique across both, so a store can
    move between them), a seller and a product each; made once."""
    tenants = []
    for i, fuso in enumerate(FUSOS):
        tenant, criado = Tenant.objects.get_or_create(
            nome=f"Propriedade {i}", defaults={"fuso_horario": fuso}
        )
        if criado:
            for j in range(LOJAS):
                Loja.objects.create(tenant=tenant, codigo=f"T{i}L{j}", nome=f"Loja {j}")
            Vendedor.objects.create(tenant=tenant, nome=f"V{i}", taxa_comissao="0.0310")
            Produto.objects.create(tenant=tenant, sku=f"P{i}", nome="P", preco="1.00")
        tenants.append(tenant)
    return tenants


def executar(sql: str, params: Any = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


# The k-th sale (by id, wrapping), for the writes that pick one.
VENDA = """(SELECT id FROM erp_vendas ORDER BY id
             OFFSET %(k)s %% greatest(1, (SELECT count(*) FROM erp_vendas))
             LIMIT 1)"""
# A store of a tenant by position.
LOJA = """(SELECT id FROM erp_lojas WHERE tenant_id = %(t)s ORDER BY codigo
            OFFSET %(j)s %% greatest(1, (SELECT count(*) FROM erp_lojas
                                          WHERE tenant_id = %(t)s))
            LIMIT 1)"""


def inserir(t: int, mes: int, dia: int, hora: int, valor: int, n: int) -> None:
    # n sales from one statement (a bulk load), one hour apart; in a store of
    # another tenant when this one has none left (they moved).
    executar(
        f"""
        INSERT INTO erp_vendas
               (tenant_id, loja_id, vendedor_id, produto_id, data_hora,
                quantidade, valor)
        SELECT %(t)s, coalesce({LOJA}, (SELECT min(id) FROM erp_lojas)),
               (SELECT min(id) FROM erp_vendedores WHERE tenant_id = %(t)s),
               (SELECT min(id) FROM erp_produtos WHERE tenant_id = %(t)s),
               make_timestamptz(2026, %(mes)s, %(dia)s, %(hora)s, 0, 0, 'UTC')
                   + g * interval '1 hour', 1 + g, %(valor)s / 100.0
          FROM generate_series(0, %(n)s - 1) AS g
        """,
        {
            "t": t,
            "j": hora,
            "mes": mes,
            "dia": dia,
            "hora": hora,
            "valor": valor,
            "n": n,
        },
    )


def escrever(op: tuple[Any, ...], tenants: list[Tenant]) -> None:
    ids = [t.pk for t in tenants]
    tipo, *args = op
    if tipo == "inserir":
        i, mes, dia, hora, valor, n = args
        inserir(ids[i], mes, dia, hora, valor, n)
    elif tipo == "corrigir":
        k, valor = args
        executar(
            f"UPDATE erp_vendas SET valor = %(v)s / 100.0 WHERE id = {VENDA}",
            {"k": k, "v": valor},
        )
    elif tipo == "apagar":
        executar(f"DELETE FROM erp_vendas WHERE id = {VENDA}", {"k": args[0]})
    elif tipo == "mover_no_tempo":
        k, horas = args
        executar(
            "UPDATE erp_vendas SET data_hora = data_hora + %(h)s * interval '1 hour'"
            f" WHERE id = {VENDA}",
            {"k": k, "h": horas},
        )
    elif tipo == "mover_de_loja":
        k, j = args
        executar(
            f"""UPDATE erp_vendas v SET loja_id = coalesce(
                   (SELECT id FROM erp_lojas WHERE tenant_id = v.tenant_id
                     ORDER BY codigo OFFSET %(j)s LIMIT 1), v.loja_id)
                 WHERE id = {VENDA}""",
            {"k": k, "j": j % LOJAS},
        )
    elif tipo == "mover_de_tenant":
        k, com_loja = args
        executar(
            f"""UPDATE erp_vendas v
                   SET tenant_id =
                       CASE WHEN v.tenant_id = %(a)s THEN %(b)s ELSE %(a)s END,
                       loja_id = CASE WHEN %(com_loja)s THEN coalesce(
                           (SELECT min(id) FROM erp_lojas WHERE tenant_id =
                               CASE WHEN v.tenant_id = %(a)s THEN %(b)s ELSE %(a)s END),
                           v.loja_id) ELSE v.loja_id END
                 WHERE id = {VENDA}""",
            {"k": k, "a": ids[0], "b": ids[1], "com_loja": com_loja},
        )
    elif tipo == "renomear_loja":
        j, nome = args
        executar(
            "UPDATE erp_lojas SET nome = %(n)s WHERE id = (SELECT id FROM erp_lojas"
            " ORDER BY id OFFSET %(j)s LIMIT 1)",
            {"j": j, "n": nome},
        )
    elif tipo == "loja_de_tenant":
        executar(
            """UPDATE erp_lojas
                  SET tenant_id = CASE WHEN tenant_id = %(a)s THEN %(b)s ELSE %(a)s END
                WHERE id = (SELECT id FROM erp_lojas ORDER BY id
                             OFFSET %(j)s LIMIT 1)""",
            {"j": args[0], "a": ids[0], "b": ids[1]},
        )
    elif tipo == "comissao":
        i, taxa = args
        executar(
            "UPDATE erp_vendedores SET taxa_comissao = %(x)s / 10000.0"
            " WHERE tenant_id = %(t)s",
            {"t": ids[i], "x": taxa},
        )
    elif tipo == "truncar":
        executar("TRUNCATE erp_vendas CASCADE")


tenant_i = st.integers(0, 1)
k = st.integers(0, 200)
escritas = st.one_of(
    st.tuples(
        st.just("inserir"),
        tenant_i,
        st.integers(1, 6),
        st.integers(1, 28),
        st.integers(0, 23),
        st.integers(1, 100_000),
        st.integers(1, 40),
    ),
    st.tuples(st.just("corrigir"), k, st.integers(1, 100_000)),
    st.tuples(st.just("apagar"), k),
    st.tuples(st.just("mover_no_tempo"), k, st.integers(-24 * 40, 24 * 40)),
    st.tuples(st.just("mover_de_loja"), k, st.integers(0, LOJAS - 1)),
    st.tuples(st.just("mover_de_tenant"), k, st.booleans()),
    st.tuples(
        st.just("renomear_loja"),
        st.integers(0, 2 * LOJAS - 1),
        st.sampled_from(["Centro", "Norte", "Sul"]),
    ),
    st.tuples(st.just("loja_de_tenant"), st.integers(0, 2 * LOJAS - 1)),
    st.tuples(st.just("comissao"), tenant_i, st.integers(1, 900)),
    # Rare (one write in ten): a TRUNCATE empties everyone's sales.
    st.just(("truncar",)),
)
# Ranges mostly of whole months, so that requests share chunks.
datas = st.tuples(st.integers(1, 6), st.sampled_from([1, 1, 1, 15]))
fins = st.tuples(st.integers(1, 6), st.sampled_from([31, 31, 31, 10]))
pedidos = st.tuples(
    st.just("pedido"),
    st.sampled_from(["vendas", "comissoes"]),
    tenant_i,
    datas,
    fins,
    st.sampled_from([[], [], [0], [1, LOJAS]]),
    st.sampled_from(["dia", "mes"]),
)
# The last request again: the one most likely to find a stale chunk.
repetir = st.just(("repetir",))
operacoes = st.lists(
    st.one_of(escritas, escritas, pedidos, repetir, repetir),
    min_size=1,
    max_size=14,
)


def pedir(op: tuple[Any, ...], tenants: list[Tenant]) -> dict[str, Any]:
    _, tipo, i, (m0, d0), (m1, d1), lojas, agrupar = op
    m0, m1 = sorted([m0, m1])
    d1 = min(d1, calendar.monthrange(2026, m1)[1])
    inicio, fim = sorted([f"2026-{m0:02d}-{d0:02d}", f"2026-{m1:02d}-{d1:02d}"])
    codigos = [f"T{j // LOJAS}L{j % LOJAS}" for j in lojas]
    return {
        "tenant": tenants[i],
        "tipo": tipo,
        "inicio": inicio,
        "fim": fim,
        "lojas": codigos,
        "agrupar": agrupar,
    }


@settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operacoes)
def test_resultado_com_reuso_e_o_da_recomputacao_byte_a_byte(
    ops: list[tuple[Any, ...]],
) -> None:
    tenants = mundo()
    ultimo = None
    for op in ops:
        if op[0] == "pedido":
            ultimo = pedir(op, tenants)
        elif op[0] != "repetir":
            escrever(op, tenants)
            continue
        if ultimo is not None:
            assert relatorio(**ultimo) == sem_reuso(**ultimo), op
    if ultimo is None:
        return
    # Nothing written since: the same request again computes nothing.
    with pytest.MonkeyPatch.context() as mp, contando(mp, ultimo["tipo"]) as calculadas:
        assert relatorio(**ultimo) == sem_reuso(**ultimo)
    # sem_reuso computed every chunk; with reuse, none was.
    partes = len(calculadas)
    with pytest.MonkeyPatch.context() as mp, contando(mp, ultimo["tipo"]) as calculadas:
        relatorio(**ultimo)
    assert calculadas == []
    assert partes >= 1
