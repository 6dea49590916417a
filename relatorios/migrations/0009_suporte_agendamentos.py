# Written by hand (RunPython only): the Suporte group looks after schedules.

from django.db import migrations

PERMISSOES = (
    ('relatorios', 'view_relatoriojob'),
    ('relatorios', 'operar_relatoriojob'),
    ('relatorios', 'view_tenant'),
    ('relatorios', 'view_agendamento'),
    ('relatorios', 'add_agendamento'),
    ('relatorios', 'change_agendamento'),
    ('relatorios', 'view_ocorrencia'),
    ('relatorios', 'view_alerta'),
    ('relatorios', 'fechar_alerta'),
)


def ampliar_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, PERMISSOES)


def reduzir_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, PERMISSOES[:3])


class Migration(migrations.Migration):

    dependencies = [
        ('relatorios', '0008_agendamentos_alertas_entregas'),
    ]

    operations = [
        migrations.RunPython(ampliar_grupo, reduzir_grupo),
    ]
