-- relatorios_publicar: one event of a tenant, numbered in commit order,
-- stored and announced with NOTIFY in the caller's transaction.
--
-- Called by the trigger functions relatorios_evento_* (migration 0019), which
-- run as DEFERRABLE INITIALLY DEFERRED constraint triggers: at COMMIT, after
-- every statement of the transaction. So:
--   * a change that rolls back is never stored nor announced (NOTIFY is
--     delivered at commit, and only then);
--   * the transaction-scoped advisory lock taken here is held from this call
--     to the end of the COMMIT, so the ids that nextval hands out follow the
--     order in which the transactions become visible: a reader that sees
--     event n sees every event below n, and "events after the client's
--     Last-Event-ID" is an exact resume point. (PostgreSQL already commits
--     notifying transactions one at a time, under its own lock on the
--     notification queue; this lock only widens that window by this call.)
--
-- The NOTIFY payload (channel relatorios_eventos) carries the whole event;
-- one that would not fit PostgreSQL's 8000-byte limit carries its id only,
-- and listeners read the row.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_publicar.sql

CREATE OR REPLACE FUNCTION relatorios_publicar(
    p_tenant bigint,
    p_job bigint,             -- NULL for an alert's or an occurrence's event
    p_tipo text,              -- 'job.executando', 'alerta.aberto', ...
    p_dados jsonb
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_id bigint;
    v_em timestamptz;
    v_aviso text;
BEGIN
    -- Any constant serves: advisory locks are per database.
    PERFORM pg_advisory_xact_lock(2920290029);
    -- Read under the lock: criado_em then grows with the id (the retention
    -- deletes a prefix of ids by it).
    v_em := clock_timestamp();
    v_id := nextval('relatorio_eventos_id_seq');
    INSERT INTO relatorio_eventos (id, tenant_id, job_id, tipo, dados, criado_em)
    VALUES (v_id, p_tenant, p_job, p_tipo, p_dados, v_em);
    v_aviso := jsonb_build_object(
        'id', v_id, 'tenant', p_tenant, 'job', p_job, 'tipo', p_tipo,
        'em', relatorios_instante(v_em), 'dados', p_dados)::text;
    IF octet_length(v_aviso) > 7500 THEN
        v_aviso := jsonb_build_object(
            'id', v_id, 'tenant', p_tenant, 'job', p_job, 'tipo', p_tipo,
            'em', relatorios_instante(v_em))::text;
    END IF;
    PERFORM pg_notify('relatorios_eventos', v_aviso);
    RETURN v_id;
END
$$;
