-- relatorios_evento_da_ocorrencia: the trigger function behind
-- `agendamento.entregue`, when an occurrence's `pronto` report is marked
-- delivered (entregue_em set), at COMMIT (migration 0019). `dados` is the
-- webhook's `data` of that event (notificacoes.saida.enfileirar_entrega_agendada)
-- without its signed download link: a link is a credential, and a stream's
-- client downloads with its own token or session.
--
-- This file is the source; a migration installs it by its sha256 (see
-- README.md here before editing). It runs as is: psql -f relatorios_evento_da_ocorrencia.sql

CREATE OR REPLACE FUNCTION relatorios_evento_da_ocorrencia()
RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_dados jsonb;
BEGIN
    SELECT jsonb_build_object(
               'agendamento', jsonb_build_object('id', g.id, 'nome', g.nome),
               'ocorrencia', jsonb_build_object(
                   'id', NEW.id,
                   'planejado_para', relatorios_instante(NEW.planejado_para)),
               'tipo', g.tipo,
               'periodo', jsonb_build_object(
                   'inicio', NEW.params ->> 'inicio', 'fim', NEW.params ->> 'fim'),
               'totais', coalesce(j.resultado -> 'totais', '{}'::jsonb),
               'job', jsonb_build_object(
                   'id', j.id,
                   'url', '/relatorios/jobs/' || j.id,
                   'pagina', '/painel/jobs/' || j.id || '/',
                   'concluido_em', relatorios_instante(j.concluido_em)),
               'fuso_horario', t.fuso_horario)
      INTO v_dados
      FROM relatorio_agendamentos g
      JOIN tenants t ON t.id = NEW.tenant_id
      LEFT JOIN relatorio_jobs j ON j.id = NEW.job_id
     WHERE g.id = NEW.agendamento_id;
    PERFORM relatorios_publicar(NEW.tenant_id, NULL, 'agendamento.entregue', v_dados);
    RETURN NULL;
END
$$;
