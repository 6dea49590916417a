-- relatorios_reivindicar: a worker's claim of one job, in one round trip.
--
-- `jobs.ciclo.reivindicar` calls it with one statement for the job its queue
-- message names. It takes the job's tenant's lock, claims the job if it is
-- pending, due and the tenant has a free running slot, and opens the
-- attempt's row in relatorio_tentativas. `desfecho` says what happened:
--   'reivindicado'  claimed; the o_* columns are what the worker runs
--   'sem_vaga'      due, but the tenant is at its running limit: the job
--                   loses its message (enfileirado_em NULL) and waits for
--                   the dispatch when a slot frees
--   'nada'          nothing to claim (not pending, not yet due, or a
--                   second delivery of the same message)
--
-- It is PL/pgSQL and not one statement so that the running count is taken
-- in a snapshot after the lock (migrations 0014 and 0015).
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_reivindicar.sql

CREATE OR REPLACE FUNCTION relatorios_reivindicar(
    p_id bigint,
    p_limite bigint,          -- RELATORIOS_MAX_EXECUTANDO_POR_TENANT
    p_trabalhador text,
    OUT desfecho text,        -- 'reivindicado' | 'sem_vaga' | 'nada'
    OUT o_id bigint,
    OUT o_tentativas integer,
    OUT o_iniciado_em timestamptz,
    OUT o_tenant_id bigint,
    OUT o_tipo text,
    OUT o_params jsonb,
    OUT o_fuso_horario text,
    OUT o_checkpoint jsonb,
    OUT o_parciais jsonb,
    OUT o_request_id text,
    OUT o_espera_s double precision -- submit to first start; NULL on a retry
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- 1. Lock the job's tenant, only if the job is pending at all.
    --    (`COLLATE "C"`: jobs.ciclo.reivindicar says why.)
    PERFORM 1 FROM tenants t JOIN relatorio_jobs j ON j.tenant_id = t.id
      WHERE j.id = p_id AND j.status = 'pendente' COLLATE "C"
        FOR NO KEY UPDATE OF t;
    IF NOT FOUND THEN
        desfecho := 'nada';
        RETURN;
    END IF;

    -- 2. The guarded claim, the running count taken after the lock, and the
    --    attempt's row in the ledger.
    WITH job AS (
    UPDATE relatorio_jobs AS j
       SET status = 'executando',
           tentativas = j.tentativas + 1,
           -- Part of the fence: clock_timestamp() differs even between two
           -- claims in one transaction, unlike now().
           iniciado_em = clock_timestamp(),
           heartbeat_em = now(),
           proxima_tentativa_em = NULL
      FROM tenants AS t
     WHERE j.id = p_id AND j.status = 'pendente' COLLATE "C"
       AND t.id = j.tenant_id
       AND (j.proxima_tentativa_em IS NULL OR j.proxima_tentativa_em <= now())
       AND (SELECT count(*) FROM relatorio_jobs e
             WHERE e.tenant_id = j.tenant_id AND e.status = 'executando')
           < p_limite
    RETURNING j.id, j.tentativas, j.iniciado_em, j.tenant_id, j.tipo,
              j.params, t.fuso_horario, j.checkpoint,
              -- Only a resumed job has any: the chunks done, in order.
              (SELECT jsonb_agg(p.parcial ORDER BY p.parte)
                 FROM relatorio_parciais p
                WHERE p.job_id = j.id
                  AND p.parte < (j.checkpoint ->> 'feitas')::int) AS parciais,
              j.request_id,
              CASE WHEN j.tentativas = 1
                   THEN extract(epoch FROM j.iniciado_em - j.criado_em) END AS espera
    ), historico AS (
        INSERT INTO relatorio_tentativas (job_id, numero, iniciado_em, trabalhador)
        SELECT job.id, job.tentativas, job.iniciado_em, p_trabalhador FROM job
    )
    SELECT job.id, job.tentativas, job.iniciado_em, job.tenant_id, job.tipo,
           job.params, job.fuso_horario, job.checkpoint, job.parciais,
           job.request_id, job.espera
      INTO o_id, o_tentativas, o_iniciado_em, o_tenant_id, o_tipo, o_params,
           o_fuso_horario, o_checkpoint, o_parciais, o_request_id, o_espera_s
      FROM job;
    IF FOUND THEN
        desfecho := 'reivindicado';
        RETURN;
    END IF;

    -- 3. Due but refused for the limit: the job loses its message and waits
    --    for the dispatch when a slot frees.
    UPDATE relatorio_jobs SET enfileirado_em = NULL
     WHERE id = p_id AND status = 'pendente' COLLATE "C"
       AND (proxima_tentativa_em IS NULL OR proxima_tentativa_em <= now());
    desfecho := CASE WHEN FOUND THEN 'sem_vaga' ELSE 'nada' END;
END
$$;
