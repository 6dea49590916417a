-- relatorios_versoes_erp: the data versions one report chunk depends on, as
-- one jsonb object {"<tenant> <table> <YYYY-MM-DD>": version}; a version
-- never bumped is absent (it is 0).
--
-- Called by relatorios/jobs/reuso.py: inside the chunk's own REPEATABLE READ
-- transaction before its SQL (so the versions and the data are of one
-- snapshot), and before a reuse, to compare with the stored chunk's.
--
-- What a chunk depends on: of the tables with dates (p_datadas), the tenant's
-- versions of every UTC month that [p_de, p_ate) touches; of the tables
-- without (p_sem_data), the tenant's one version; of all of them, tenant 0's
-- (TRUNCATE). The trigger function relatorios_erp_versionar bumps them.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is:
-- psql -f relatorios_versoes_erp.sql

CREATE OR REPLACE FUNCTION relatorios_versoes_erp(
    p_tenant bigint,
    p_datadas text[],
    p_sem_data text[],
    p_de timestamptz,
    p_ate timestamptz
) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
               jsonb_object_agg(
                   v.tenant_id || ' ' || v.tabela || ' ' || to_char(v.mes, 'YYYY-MM-DD'),
                   v.versao),
               '{}'::jsonb)
      FROM relatorio_versoes_erp v
     WHERE (v.tenant_id = p_tenant
            AND v.tabela = ANY (p_datadas)
            AND v.mes >= date_trunc('month', p_de AT TIME ZONE 'UTC')
            AND v.mes < p_ate AT TIME ZONE 'UTC')
        OR (v.tenant_id IN (p_tenant, 0)
            AND v.tabela = ANY (p_sem_data || p_datadas)
            AND v.mes = DATE '0001-01-01')
$$;
