-- relatorios_ocioso: whether a job computed ahead may take a worker now.
--
-- Computing ahead (jobs.antecipacao, migration 0032) runs in idle capacity
-- only. Idle, for a job of tenant `p_tenant`, means: no job a person asked
-- for waits in the queue (pending with a message, due), none of that
-- tenant's own waits for a slot, and fewer than `p_max_antecipados`
-- (RELATORIOS_ANTECIPAR_MAX_EXECUTANDO) jobs computed ahead run in all. A job
-- computed ahead counts as a person's once someone asked for it
-- (`pedido_em`).
--
-- One predicate for the two places that decide: the claim
-- (relatorios_reivindicar refuses such a job otherwise) and the dispatch
-- (jobs.vagas.despachar gives it no message otherwise), so a refused job is
-- not handed its message straight back. Both read the pending rows through
-- relatorio_jobs_fila and the running ones through relatorio_jobs_executando.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_ocioso.sql

CREATE OR REPLACE FUNCTION relatorios_ocioso(
    p_tenant bigint,
    p_max_antecipados bigint
) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT NOT EXISTS (
               SELECT 1 FROM relatorio_jobs p
                WHERE p.status = 'pendente'
                  AND (p.antecipado_em IS NULL OR p.pedido_em IS NOT NULL)
                  AND (p.enfileirado_em IS NOT NULL OR p.tenant_id = p_tenant)
                  AND (p.proxima_tentativa_em IS NULL
                       OR p.proxima_tentativa_em <= now()))
       AND (SELECT count(*) FROM relatorio_jobs r
             WHERE r.status = 'executando'
               AND r.antecipado_em IS NOT NULL AND r.pedido_em IS NULL)
           < p_max_antecipados
$$;
