# Support sees the clusters' list (relatorios/admin_clusters.py): the group
# follows PERMISSOES_DO_SUPORTE again, as relatorios/suporte.py asks.

from django.db import migrations


def criar_grupo(apps, schema_editor):
    from relatorios.suporte import criar_grupo_suporte

    criar_grupo_suporte(apps)


class Migration(migrations.Migration):

    dependencies = [
        ('relatorios', '0008_agendamentos_alertas_entregas'),
    ]

    operations = [
        migrations.RunPython(criar_grupo, migrations.RunPython.noop),
    ]
