-- relatorios_evento_do_alerta: the trigger function behind `alerta.aberto`
-- (a row inserted) and `alerta.fechado` (fechado_em set), at COMMIT
-- (migration 0019). `dados` is the webhook's `data` of the same event
-- (notificacoes.saida.enfileirar_alerta).
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_evento_do_alerta.sql

CREATE OR REPLACE FUNCTION relatorios_evento_do_alerta()
RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_dados jsonb;
BEGIN
    SELECT jsonb_build_object(
               'id', NEW.id, 'motivo', NEW.motivo,
               'agendamento', jsonb_build_object('id', g.id, 'nome', g.nome),
               'tipo', g.tipo,
               'planejado_para', relatorios_instante(o.planejado_para),
               'prazo_em', relatorios_instante(o.prazo_em),
               'aberto_em', relatorios_instante(NEW.aberto_em),
               'fechado_em', relatorios_instante(NEW.fechado_em),
               'job', CASE WHEN j.id IS NULL THEN NULL
                           ELSE jsonb_build_object('id', j.id, 'status', j.status) END,
               'fuso_horario', t.fuso_horario)
      INTO v_dados
      FROM relatorio_ocorrencias o
      JOIN relatorio_agendamentos g ON g.id = o.agendamento_id
      JOIN tenants t ON t.id = NEW.tenant_id
      LEFT JOIN relatorio_jobs j ON j.id = o.job_id
     WHERE o.id = NEW.ocorrencia_id;
    PERFORM relatorios_publicar(
        NEW.tenant_id, NULL,
        CASE WHEN TG_OP = 'INSERT' THEN 'alerta.aberto' ELSE 'alerta.fechado' END,
        v_dados);
    RETURN NULL;
END
$$;
