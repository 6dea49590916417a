-- relatorios_instante: an instant as the events and webhooks write it
-- (UTC, microseconds, Z: notificacoes.saida.iso); NULL stays NULL.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_instante.sql

CREATE OR REPLACE FUNCTION relatorios_instante(p timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(p AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;
