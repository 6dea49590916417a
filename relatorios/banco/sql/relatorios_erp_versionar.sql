-- relatorios_erp_versionar: the trigger function on every erp_* table that
-- bumps the data versions (relatorio_versoes_erp) of what a writing
-- statement touched, in the writer's own transaction.
--
-- A stored report chunk records the versions it read, read in the same
-- snapshot as its data (relatorios/jobs/reuso.py); it is reused only while
-- they are all unchanged. So any write a chunk could have seen bumps one of
-- them: the versions commit, or roll back, with the rows.
--
-- Statement-level, with transition tables (a bulk load bumps each
-- tenant-month once, not once per row). One trigger per event: PostgreSQL
-- allows transition tables only on a single-event trigger. UPDATE bumps the
-- old row's tenant and month and the new row's: a row moved between months
-- or tenants invalidates both sides. TRUNCATE has no rows to look at: it
-- bumps the table's version of tenant 0, which every chunk records.
--
-- TG_ARGV[0]: the SQL expression of a row's period (its UTC month, a date),
-- or '' for a table without dates, whose rows share one version per tenant
-- (mes 0001-01-01). The migration writes it from
-- relatorios.models.partes.PERIODO_DA_LINHA.
--
-- The rows are upserted in key order, so two bulk writers meet the version
-- rows in the same order and cannot deadlock on them. The cost: a writer
-- holds the row of each tenant-month it wrote until its commit, so writers
-- of the same tenant and month commit one after the other.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is:
-- psql -f relatorios_erp_versionar.sql

CREATE OR REPLACE FUNCTION relatorios_erp_versionar() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    periodo text := coalesce(nullif(TG_ARGV[0], ''), 'DATE ''0001-01-01''');
    linhas text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        INSERT INTO relatorio_versoes_erp AS v (tenant_id, tabela, mes, versao)
        VALUES (0, TG_TABLE_NAME, DATE '0001-01-01', 1)
        ON CONFLICT (tenant_id, tabela, mes) DO UPDATE SET versao = v.versao + 1;
        RETURN NULL;
    END IF;
    linhas := CASE TG_OP
        WHEN 'INSERT' THEN format('SELECT tenant_id, %s AS mes FROM novas', periodo)
        WHEN 'DELETE' THEN format('SELECT tenant_id, %s AS mes FROM velhas', periodo)
        ELSE format(
            'SELECT tenant_id, %1$s AS mes FROM velhas'
            ' UNION SELECT tenant_id, %1$s AS mes FROM novas', periodo)
    END;
    EXECUTE format(
        'INSERT INTO relatorio_versoes_erp AS v (tenant_id, tabela, mes, versao)'
        ' SELECT DISTINCT tenant_id, %L, mes, 1 FROM (%s) AS t ORDER BY 1, 3'
        ' ON CONFLICT (tenant_id, tabela, mes) DO UPDATE SET versao = v.versao + 1',
        TG_TABLE_NAME, linhas);
    RETURN NULL;
END
$$;
