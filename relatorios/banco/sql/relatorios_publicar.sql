-- relatorios_publicar: one event of a tenant, stored in the caller's
-- transaction; nothing else.
--
-- Called by the trigger functions relatorios_evento_* (migration 0019), which
-- run as DEFERRABLE INITIALLY DEFERRED constraint triggers: at COMMIT, after
-- every statement of the transaction. So a change that rolls back is never
-- stored, and the row becomes visible with the change, at its commit.
--
-- No lock and no NOTIFY here: both made every job-changing COMMIT in the
-- database wait for the one before it (an advisory lock held to the end of
-- the commit, and PostgreSQL's own lock on the notification queue), which cut
-- the concurrent new submits about 3x (docs/benchmarks.md, B9 publish). The
-- id comes from the sequence at this call, just before the commit, so ids
-- follow commit order except across commits that overlap: a reader may see
-- id n+1 while n's transaction is still committing (or n rolled back after
-- taking it, a permanent gap). Each events process reads the table in id
-- order and waits, for a bounded time, for such a gap to fill before it
-- passes it (relatorios/eventos/central.py); that reader, not this function,
-- now makes "every event after Last-Event-ID, in order" hold. Events of one
-- job do follow its commits: each change holds the job row's lock to its
-- commit, so the next change of that job takes its id after.
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
BEGIN
    v_id := nextval('relatorio_eventos_id_seq');
    -- Read after nextval: an event whose id is below another's took it no
    -- later than that one's criado_em (the reader's start relies on it).
    INSERT INTO relatorio_eventos (id, tenant_id, job_id, tipo, dados, criado_em)
    VALUES (v_id, p_tenant, p_job, p_tipo, p_dados, clock_timestamp());
    RETURN v_id;
END
$$;
