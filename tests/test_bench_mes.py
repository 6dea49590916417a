"""B11's month (bench/mes.py, bench/b11_mes.py): the calendar asks what the
issue describes, two copies of a chain fed the same nights stay identical
(what makes "0 results differ" mean something), and the comparison is
strict."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest
from django.core.management import call_command

from bench import mes
from bench.b11_mes import Clique, Execucao, canonico, diferencas, precisao
from relatorios import tipos
from relatorios.jobs import execucao
from relatorios.models import RelatorioJob, Tenant
from relatorios.tipos.base import Contexto
from tests import helpers, processos

LOJAS = ["L001", "L002", "L003"]


def test_o_calendario_tem_as_manhas_as_segundas_e_o_fechamento_do_dia_1() -> None:
    dias = mes.calendario(medidos=8, aquecimento=3, lojas=LOJAS, gerentes=2, avulsos=2)
    medidos = [d for d in dias if d.medido]
    nomes = {d.data: [p.nome for p in d.pedidos] for d in medidos}
    primeiro = medidos[0]

    assert [d.data for d in dias if not d.medido] == [
        date(2026, 4, 1),
        date(2026, 5, 1),
        date(2026, 5, 29),
        date(2026, 5, 30),
        date(2026, 5, 31),
    ]
    assert primeiro.data == date(2026, 6, 1)  # a Monday
    assert {"ontem", "ontem L001", "ontem L002", "semana", "fechamento", "mes"} <= set(
        nomes[date(2026, 6, 1)]
    )
    assert "fechamento" not in nomes[date(2026, 6, 2)]
    assert "semana" in nomes[date(2026, 6, 8)]
    ontem = next(p for p in primeiro.pedidos if p.nome == "ontem")
    assert (ontem.cliques, ontem.params["inicio"]) == (20, "2026-05-31")
    fechamento = next(p for p in primeiro.pedidos if p.nome == "fechamento")
    assert fechamento.params == {"inicio": "2026-05-01", "fim": "2026-05-31"}
    # Every request is valid for its type (else the bench would stop on a 400).
    for dia in dias:
        for pedido in dia.pedidos:
            tipos.obter(pedido.tipo).normalizar(pedido.params)


def _resultados(tenant: Tenant) -> list[str]:
    ctx = Contexto(job_id=0, tenant_id=tenant.pk, fuso_horario=tenant.fuso_horario)
    saida = []
    for tipo, brutos in [
        ("vendas", {"inicio": "2026-01-01", "fim": "2026-06-03", "agrupar": "mes"}),
        ("vendas", {"inicio": "2026-05-25", "fim": "2026-06-03", "agrupar": "dia"}),
        ("fechamento", {"inicio": "2026-05-01", "fim": "2026-05-31"}),
    ]:
        tipo_relatorio = tipos.obter(tipo)
        resultado = execucao.calcular(
            tipo_relatorio, ctx, tipo_relatorio.normalizar(brutos), timeout_s=60
        )
        saida.append(canonico(resultado, {}))
    return saida


def test_duas_copias_com_as_mesmas_noites_dao_os_mesmos_relatorios(
    transactional_db: None,
) -> None:
    copias = []
    for _ in range(2):
        tenant = helpers.criar_tenant()
        call_command(
            "gerar_dados",
            tenant=tenant.pk,
            lojas=3,
            vendas=3000,
            produtos=10,
            inicio="2026-01-01",
            dias=(mes.MES - date(2026, 1, 1)).days,
            seed=9,
            stdout=io.StringIO(),
        )
        copias.append(tenant)
    url = processos.ambiente()["DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as conexao:
        for tenant in copias:
            cadastro = mes.cadastro(conexao, tenant.pk)
            for d in range(1, 5):
                mes.carga_da_noite(
                    conexao,
                    cadastro,
                    mes.MES + timedelta(days=d),
                    vendas_por_dia=50,
                    semente=1,
                )

    primeira, segunda = (_resultados(t) for t in copias)

    assert primeira == segunda
    # The nights wrote: June has sales now.
    assert '"periodo":"2026-06"' in primeira[0]


def test_o_relogio_move_so_os_jobs_do_dia_para_o_instante_simulado(
    transactional_db: None,
) -> None:
    tenant = helpers.criar_tenant()
    antigo = RelatorioJob.objects.create(
        chave="antigo", tenant=tenant, tipo="vendas", params={}, status="pronto"
    )
    url = processos.ambiente()["DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as conexao:
        desde = conexao.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]
        do_dia = RelatorioJob.objects.create(
            chave="do dia", tenant=tenant, tipo="vendas", params={}, status="pronto"
        )
        RelatorioJob.objects.filter(pk=do_dia.pk).update(
            concluido_em=datetime.now(UTC),
            expira_em=datetime.now(UTC) + timedelta(days=1),
        )
        instante = datetime(2026, 6, 3, 11, tzinfo=UTC)
        movidos = mes.viver_o_dia_em(conexao, desde=desde, instante=instante)

    do_dia.refresh_from_db()
    criado_antes = antigo.criado_em
    antigo.refresh_from_db()
    assert movidos == 1
    assert abs((do_dia.criado_em - instante).total_seconds()) < 5
    assert do_dia.expira_em is not None
    assert abs((do_dia.expira_em - (instante + timedelta(days=1))).total_seconds()) < 5
    assert antigo.criado_em == criado_antes


def clique(chave: tuple[int, str, str], job_id: int, texto: str | None) -> Clique:
    return Clique(chave, job_id, imediato=False, espera_s=0.1, resultado=texto)


@pytest.mark.parametrize(
    ("off", "on", "diferentes"),
    [
        (["a", "a"], ["a"], 0),
        (["a"], ["b"], 1),
        # Two clicks of the same report that disagree within one run.
        (["a"], ["a", "b"], 1),
    ],
)
def test_a_comparacao_olha_cada_clique(
    off: list[str], on: list[str], diferentes: int
) -> None:
    chave = (1, "2026-06-01", "ontem")
    a, b = Execucao("off"), Execucao("on")
    a.cliques = [clique(chave, 1, t) for t in off]
    b.cliques = [clique(chave, 2, t) for t in on]

    comuns, lista, sem = diferencas(a, b)

    assert (comuns, len(lista), sem) == (1, diferentes, 0)


def test_precisao_e_a_parte_dos_antecipados_que_alguem_pediu() -> None:
    cliques = [clique((1, "d", "x"), 7, "a"), clique((1, "d", "y"), 9, "a")]

    assert precisao({7, 8}, cliques) == 0.5
    assert precisao(set(), cliques) is None


def test_o_id_do_vendedor_de_cada_copia_vira_a_sua_posicao() -> None:
    resultado = {"linhas": [{"vendedor_id": 41, "receita": "1.00"}]}

    assert (
        canonico(resultado, {41: 0})
        == '{"linhas":[{"receita":"1.00","vendedor_id":0}]}'
    )
