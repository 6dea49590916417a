-- relatorios_evento_do_job: the trigger function behind a job's events.
--
-- Fires (migration 0019) at COMMIT for every row of relatorio_jobs inserted,
-- and for every update that changed its status or its progress: submit,
-- restart, claim, progress, finish, failure, retry, hand-back, the sweep's
-- orphans and support's actions all pass here, whatever code made them. NEW
-- is the row as that statement left it, so each change is one event even
-- when one transaction makes several.
--
-- `dados` holds what the status endpoint shows (all but `resultado`, read
-- when a stream sends a `pronto`), instants in UTC as the webhooks write them.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_evento_do_job.sql

CREATE OR REPLACE FUNCTION relatorios_evento_do_job()
RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM relatorios_publicar(
        NEW.tenant_id, NEW.id, 'job.' || NEW.status,
        jsonb_build_object(
            'id', NEW.id, 'tipo', NEW.tipo, 'status', NEW.status,
            'progresso', NEW.progresso, 'tentativas', NEW.tentativas,
            'proxima_tentativa_em', relatorios_instante(NEW.proxima_tentativa_em),
            'criado_em', relatorios_instante(NEW.criado_em),
            'erro', NEW.erro,
            'concluido_em', relatorios_instante(NEW.concluido_em),
            'expira_em', relatorios_instante(NEW.expira_em)));
    RETURN NULL;
END
$$;
