# Written by hand (RunPython only): support sees the clusters' list
# (relatorios/admin/clusters.py).

from django.db import migrations

ANTES = (
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
PERMISSOES = (*ANTES, ('relatorios', 'view_cluster'))


def ampliar_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, PERMISSOES)


def reduzir_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, ANTES)


class Migration(migrations.Migration):

    dependencies = [
        ('relatorios', '0009_suporte_agendamentos'),
    ]

    operations = [
        migrations.RunPython(ampliar_grupo, reduzir_grupo),
    ]
