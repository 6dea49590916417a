-- relatorios_submeter: a new submit's writes, in one round trip.
--
-- `jobs.pedidos.submeter` calls it with one statement when its read by chave
-- found no live job (absent, failed or expired). In the caller's
-- transaction it checks the store codes, takes the tenant's lock, counts the
-- tenant's occupancy, runs seed 000's upsert and, when the tenant has a free
-- slot, writes django-q2's queue message. `desfecho` says what happened:
--   'lojas'   unknown store codes (listed in lojas_desconhecidas); no write
--   'limite'  the tenant is at its pending cap; no write (HTTP 429)
--   'corrida' another request's row stands in the way; read again
--   'criado'  the job was created or restarted (`job`), with its message
--             when `enfileirado`
--
-- It is PL/pgSQL and not one statement so that the count taken after the
-- lock sees what concurrent submits committed meanwhile (migration 0014).
--
-- The restart's SET list in step 5 is the support's rerun's too
-- (`jobs.suporte.RECOMECO`): change both together.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_submeter.sql

CREATE OR REPLACE FUNCTION relatorios_submeter(
    p_id bigint,              -- the id the message names: a restartable row's,
                              -- or one reserved from the sequence for a new row
    p_chave text,
    p_tenant bigint,
    p_tipo text,
    p_params jsonb,
    p_usuario bigint,
    p_lojas text[],
    p_max_pendentes bigint,
    p_max_em_voo bigint,
    p_fila text,
    p_mensagem text,          -- the signed django-q2 package, written only
                              -- when the tenant has a free slot
    p_request_id text,        -- the request's X-Request-ID, kept with the job
    OUT desfecho text,        -- 'lojas' | 'limite' | 'corrida' | 'criado'
    OUT lojas_desconhecidas text[],
    OUT enfileirado boolean,
    OUT job relatorio_jobs
) LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_pendentes bigint;
    v_em_voo bigint;
BEGIN
    -- 1. The store codes, in the order asked (nothing is written on error).
    SELECT array_agg(u.codigo ORDER BY u.n) INTO lojas_desconhecidas
      FROM unnest(p_lojas) WITH ORDINALITY AS u(codigo, n)
     WHERE NOT EXISTS (SELECT 1 FROM erp_lojas e
                        WHERE e.tenant_id = p_tenant AND e.codigo = u.codigo);
    IF lojas_desconhecidas IS NOT NULL THEN
        desfecho := 'lojas';
        RETURN;
    END IF;

    -- 2. The tenant's lock (FOR NO KEY UPDATE: inserts' foreign key checks
    --    do not wait on it); concurrent submits and claims queue here.
    PERFORM 1 FROM tenants WHERE id = p_tenant FOR NO KEY UPDATE;

    -- 3. Occupancy, in a new snapshot taken after the lock. One subquery per
    --    status, each matching one partial index (jobs.vagas.ocupacao).
    SELECT p.pendentes, p.enfileirados + e.executando
      INTO v_pendentes, v_em_voo
      FROM (SELECT count(*) AS pendentes, count(enfileirado_em) AS enfileirados
              FROM relatorio_jobs
             WHERE tenant_id = p_tenant AND status = 'pendente') AS p,
           (SELECT count(*) AS executando
              FROM relatorio_jobs
             WHERE tenant_id = p_tenant AND status = 'executando') AS e;
    enfileirado := v_em_voo < p_max_em_voo;

    -- 4. The pending cap. A request that would create or restart the job is
    --    refused before writing anything (the caller raises the 429); one
    --    that lost a race to an existing, live job is not: it retries and
    --    reads that job.
    IF v_pendentes >= p_max_pendentes THEN
        PERFORM 1 FROM relatorio_jobs j
          WHERE j.chave = p_chave
            AND NOT (j.id = p_id
                     AND (j.status = 'falhou'
                          OR (j.status = 'pronto' AND j.expira_em < now())));
        desfecho := CASE WHEN FOUND THEN 'corrida' ELSE 'limite' END;
        RETURN;
    END IF;

    -- 5. Seed 000's upsert: the WHERE of DO UPDATE alone decides whether an
    --    existing job starts over, and only the row the message was signed
    --    for (`j.id = p_id`) may.
    INSERT INTO relatorio_jobs AS j
           (id, chave, tenant_id, tipo, params, status, solicitado_por_id,
            enfileirado_em, request_id)
    -- The id column is GENERATED ALWAYS (the seed's schema); p_id came from
    -- its own sequence (jobs.pedidos._ler_por_chave).
    OVERRIDING SYSTEM VALUE
    VALUES (p_id, p_chave, p_tenant, p_tipo, p_params, 'pendente', p_usuario,
            CASE WHEN enfileirado THEN now() END, p_request_id)
    ON CONFLICT (chave) DO UPDATE
       SET status = 'pendente', tentativas = 0, erro = NULL, erro_detalhe = NULL,
           resultado = NULL, checkpoint = NULL, criado_em = now(),
           iniciado_em = NULL, heartbeat_em = NULL, concluido_em = NULL,
           expira_em = NULL, progresso = 0, proxima_tentativa_em = NULL,
           solicitado_por_id = EXCLUDED.solicitado_por_id,
           enfileirado_em = EXCLUDED.enfileirado_em,
           request_id = EXCLUDED.request_id
     WHERE j.id = p_id
       AND (j.status = 'falhou' OR (j.status = 'pronto' AND j.expira_em < now()))
    RETURNING j.* INTO job;
    IF NOT FOUND THEN
        -- Another request's row, committed after our read: read it again.
        desfecho := 'corrida';
        RETURN;
    END IF;

    -- 6. The queue message, in the same transaction as the row. `lock` is
    --    when it becomes visible to the broker: now, as django-q2's ORM
    --    broker writes it.
    IF enfileirado THEN
        INSERT INTO django_q_ormq (key, payload, lock)
        VALUES (p_fila, p_mensagem, clock_timestamp());
    END IF;
    desfecho := 'criado';
END
$$;
