# Written by hand (RunPython only): support sees the webhooks and the
# notification outbox and resends a delivery (relatorios/admin/entregas.py).

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
    ('relatorios', 'view_cluster'),
)
PERMISSOES = (
    *ANTES,
    ('relatorios', 'view_webhook'),
    ('relatorios', 'view_entrega'),
    ('relatorios', 'reenviar_entrega'),
)


def ampliar_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, PERMISSOES)


def reduzir_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, ANTES)


class Migration(migrations.Migration):

    dependencies = [
        ('relatorios', '0011_limites_da_api'),
    ]

    operations = [
        migrations.RunPython(ampliar_grupo, reduzir_grupo),
    ]
