"""Report types that exist only for the tests (RELATORIOS_TIPOS_EXTRAS)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from django.db.backends.utils import CursorWrapper
from rest_framework import serializers

from relatorios.models.erp import Loja, Venda
from relatorios.tipos.base import Contexto, Parcial, Parte, TipoRelatorio, meses
from relatorios.tipos.colunas import Coluna
from relatorios.tipos.vendas import Vendas


class LinhaDeTesteSerializer(serializers.Serializer):
    loja = serializers.CharField()
    nome = serializers.CharField()


class ResultadoDeTesteSerializer(serializers.Serializer):
    linhas = LinhaDeTesteSerializer(many=True, required=False)


class DeTeste(TipoRelatorio):
    """The parts every type declares (tipos.verificacao), here the test
    Fechamento's table of stores: the other types exercise the job
    machinery, and a table is their placeholder."""

    colunas = (Coluna("loja", "loja"), Coluna("nome", "nome"))
    grafico = None
    resultado = ResultadoDeTesteSerializer
    exemplo = {"linhas": [{"loja": "L001", "nome": "Loja Centro"}]}
    tabelas_erp = (Loja,)
    # Their chunks count calls, sleep or fail on purpose: always computed.
    partes_reutilizaveis = False


class TimeoutDeTeste(DeTeste):
    """The type's time budget from RELATORIOS_TESTE_TIMEOUT_S, when set."""

    def timeout(self) -> int:
        return (
            int(os.environ.get("RELATORIOS_TESTE_TIMEOUT_S", "0")) or super().timeout()
        )


class Quebrado(DeTeste):
    """A report with a bug: it fails on its first chunk."""

    tipo = "teste_quebrado"
    titulo = "Quebrado"
    tabelas_erp = ()

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return meses(params["inicio"], params["fim"])

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        linhas: list[int] = []
        return {"media": sum(linhas) / len(linhas)}  # the bug: no rows

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {}


class Lento(DeTeste):
    """One chunk per month, each a pg_sleep of RELATORIOS_TESTE_PAUSA_S seconds."""

    tipo = "teste_lento"
    titulo = "Lento"
    tabelas_erp = ()

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return meses(params["inicio"], params["fim"])

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        pausa = float(os.environ.get("RELATORIOS_TESTE_PAUSA_S", "0.3"))
        cursor.execute("SELECT pg_sleep(%s), pg_backend_pid()", [pausa])
        return {"parte": parte, "pid": cursor.fetchone()[1]}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {"partes": [p["parte"] for p in parciais]}


class Contado(TimeoutDeTeste, Lento):
    """Like Lento, and each chunk it starts leaves a row in teste_execucoes (on
    its own connection: the report's transaction is read-only), so tests can
    count what ran where, even across processes killed mid-way."""

    tipo = "teste_contado"
    titulo = "Contado"
    tabelas_erp = (Venda,)

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        if ctx.job_id:  # job 0: a reference run outside any job, not counted
            with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as c:
                c.execute(
                    "INSERT INTO teste_execucoes (job_id, parte, pid)"
                    " VALUES (%s, %s, %s)",
                    [ctx.job_id, parte["inicio"], os.getpid()],
                )
        parcial = super().gerar_parte(cursor, ctx, params, parte)
        # Something computed from data, so a resumed result can be compared.
        cursor.execute(
            "SELECT count(*), coalesce(sum(valor), 0)::text FROM erp_vendas"
            " WHERE tenant_id = %s AND data_hora::date BETWEEN %s AND %s",
            [ctx.tenant_id, parte["inicio"], parte["fim"]],
        )
        vendas, receita = cursor.fetchone()
        return {**parcial, "vendas": vendas, "receita": receita}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {
            "partes": [p["parte"] for p in parciais],
            "vendas": [[p["vendas"], p["receita"]] for p in parciais],
        }


class ContadoReusavel(Contado):
    """Contado whose chunks the chunk store keeps and reuses (jobs.reuso):
    teste_execucoes then shows which chunks a job actually computed."""

    tipo = "teste_contado_reusavel"
    titulo = "Contado reusável"
    partes_reutilizaveis = True


class Dorminhoco(TimeoutDeTeste):
    """Stuck in Python, not in SQL: only django-q2's hard stop can end it."""

    tipo = "teste_dorminhoco"
    titulo = "Dorminhoco"
    tabelas_erp = ()

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return [{"unica": True}]

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        time.sleep(float(os.environ.get("RELATORIOS_TESTE_DORMIR_S", "0.3")))
        return {}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        return {}


class Fechamento(DeTeste):
    """The monthly close of seed 004's story: it fails on bad data (a store
    without a name) until support fixes the data and runs it again."""

    tipo = "teste_fechamento"
    titulo = "Fechamento"

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return [{"unica": True}]

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        cursor.execute(
            "SELECT codigo FROM erp_lojas WHERE tenant_id = %s AND nome = ''"
            " ORDER BY codigo",
            [ctx.tenant_id],
        )
        sem_nome = [codigo for (codigo,) in cursor.fetchall()]
        if sem_nome:
            raise ValueError(f"loja sem nome: {', '.join(sem_nome)}")
        cursor.execute(
            "SELECT codigo, nome FROM erp_lojas WHERE tenant_id = %s ORDER BY codigo",
            [ctx.tenant_id],
        )
        return {"linhas": [{"loja": c, "nome": n} for c, n in cursor.fetchall()]}

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        # A table, as accounting's file has: one line per store.
        linhas = [linha for p in parciais for linha in p["linhas"]]
        return {"linhas": linhas, "totais": {"lojas": len(linhas)}}


class LinhaVolumosoSerializer(serializers.Serializer):
    loja = serializers.CharField()
    produto = serializers.CharField()
    receita = serializers.CharField()
    itens = serializers.IntegerField()


class ResultadoVolumosoSerializer(serializers.Serializer):
    linhas = LinhaVolumosoSerializer(many=True)


class Volumoso(TipoRelatorio):
    """A result of RELATORIOS_TESTE_LINHAS lines (default 2,000), made in SQL in
    one chunk: a large workbook without an ERP's worth of data."""

    tipo = "teste_volumoso"
    titulo = "Volumoso"
    # Its keys as titles, as text: the workbook is about size, not formats.
    colunas = tuple(Coluna(c, c) for c in ("loja", "produto", "receita", "itens"))
    grafico = None
    resultado = ResultadoVolumosoSerializer
    exemplo = {"linhas": []}
    tabelas_erp = ()
    # Its one chunk has no dates and depends on RELATORIOS_TESTE_LINHAS, not
    # on ERP rows: always computed.
    partes_reutilizaveis = False

    def partes(
        self, cursor: CursorWrapper, ctx: Contexto, params: Mapping[str, Any]
    ) -> list[Parte]:
        return [{"unica": True}]

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        cursor.execute(
            """
            SELECT 'L' || lpad((n %% 50)::text, 3, '0'), 'Produto ' || n,
                   (n * 7 %% 1000)::text || '.50', n %% 97
              FROM generate_series(1, %s) AS n
            """,
            [int(os.environ.get("RELATORIOS_TESTE_LINHAS", "2000"))],
        )
        return {
            "linhas": [
                {"loja": loja, "produto": produto, "receita": receita, "itens": itens}
                for loja, produto, receita, itens in cursor.fetchall()
            ]
        }

    def combinar(
        self, params: Mapping[str, Any], parciais: Sequence[Parcial]
    ) -> dict[str, Any]:
        linhas = [linha for p in parciais for linha in p["linhas"]]
        return {"linhas": linhas, "totais": {"itens": sum(x["itens"] for x in linhas)}}


class VendasEmEspera(Vendas):
    """Sales per period and store, whose chunks after the first wait for the
    advisory lock RELATORIOS_TESTE_TRAVA (a test holds it): a report caught
    running with its first chunk done, for as long as the test needs."""

    tipo = "teste_vendas_em_espera"
    titulo = "Vendas em espera"

    def gerar_parte(
        self,
        cursor: CursorWrapper,
        ctx: Contexto,
        params: Mapping[str, Any],
        parte: Parte,
    ) -> Parcial:
        trava = os.environ.get("RELATORIOS_TESTE_TRAVA")
        if trava and parte["inicio"] > params["inicio"]:
            # Shared, in the chunk's own read-only transaction: released
            # with it, and never in another chunk's way.
            cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [int(trava)])
        return super().gerar_parte(cursor, ctx, params, parte)
