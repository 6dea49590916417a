from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

# Seed 000's relatorio_jobs, column by column: (type, nullable, default).
COLUNAS_DA_SEMENTE = {
    "id": ("bigint", "NO", None),
    "chave": ("text", "NO", None),
    "tenant_id": ("bigint", "NO", None),
    "tipo": ("text", "NO", None),
    "params": ("jsonb", "NO", None),
    "status": ("text", "NO", None),
    "tentativas": ("integer", "NO", "0"),
    "erro": ("text", "YES", None),
    "resultado": ("jsonb", "YES", None),
    "criado_em": ("timestamp with time zone", "NO", "now()"),
    "iniciado_em": ("timestamp with time zone", "YES", None),
    "heartbeat_em": ("timestamp with time zone", "YES", None),
    "concluido_em": ("timestamp with time zone", "YES", None),
    "expira_em": ("timestamp with time zone", "YES", None),
}
# Columns the features added, each documented in the README's schema section.
COLUNAS_EXTRAS = {
    "progresso",
    "erro_detalhe",
    "solicitado_por_id",
    "proxima_tentativa_em",
    "enfileirado_em",
    "checkpoint",
    "request_id",
    "antecipado_em",
    "pedido_em",
}


def consultar(sql: str, params: list[object] | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.fetchall()


def test_colunas_espelham_a_semente() -> None:
    linhas = consultar(
        """
        SELECT column_name, data_type, is_nullable, column_default
          FROM information_schema.columns
         WHERE table_name = 'relatorio_jobs'
        """
    )
    colunas = {nome: (tipo, nulo, padrao) for nome, tipo, nulo, padrao in linhas}
    assert {n: colunas[n] for n in COLUNAS_DA_SEMENTE} == COLUNAS_DA_SEMENTE
    assert set(colunas) - set(COLUNAS_DA_SEMENTE) == COLUNAS_EXTRAS


def test_id_e_identidade_sempre_gerada() -> None:
    assert consultar(
        """
        SELECT is_identity, identity_generation FROM information_schema.columns
         WHERE table_name = 'relatorio_jobs' AND column_name = 'id'
        """
    ) == [("YES", "ALWAYS")]
    assert consultar(
        """
        SELECT pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = 'relatorio_jobs'::regclass AND contype = 'p'
        """
    ) == [("PRIMARY KEY (id)",)]


def test_chave_e_unica() -> None:
    assert consultar(
        """
        SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = 'relatorio_jobs'::regclass AND contype = 'u'
        """
    ) == [("relatorio_jobs_chave_key", "UNIQUE (chave)")]


def test_status_so_aceita_os_quatro_valores() -> None:
    (definicao,) = consultar(
        """
        SELECT pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = 'relatorio_jobs'::regclass
           AND conname = 'relatorio_jobs_status_check'
        """
    )[0]
    assert definicao == (
        "CHECK ((status = ANY (ARRAY['pendente'::text, 'executando'::text, "
        "'pronto'::text, 'falhou'::text])))"
    )


@pytest.mark.parametrize(
    ("nome", "definicao"),
    [
        (
            "relatorio_jobs_fila",
            "CREATE INDEX relatorio_jobs_fila ON public.relatorio_jobs "
            "USING btree (criado_em) WHERE (status = 'pendente'::text)",
        ),
        (
            "relatorio_jobs_executando",
            "CREATE INDEX relatorio_jobs_executando ON public.relatorio_jobs "
            "USING btree (tenant_id) WHERE (status = 'executando'::text)",
        ),
    ],
)
def test_indices_parciais_da_semente(nome: str, definicao: str) -> None:
    assert consultar(
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'relatorio_jobs' "
        "AND indexname = %s",
        [nome],
    ) == [(definicao,)]
