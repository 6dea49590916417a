"""A tenant's allowed email domains (notificacoes/enderecos.py), and support's
permission to set them (the only field of a tenant support may change)."""

from django.db import migrations, models

ANTES = (
    ("relatorios", "view_relatoriojob"),
    ("relatorios", "operar_relatoriojob"),
    ("relatorios", "view_tenant"),
    ("relatorios", "view_agendamento"),
    ("relatorios", "add_agendamento"),
    ("relatorios", "change_agendamento"),
    ("relatorios", "view_ocorrencia"),
    ("relatorios", "view_alerta"),
    ("relatorios", "fechar_alerta"),
    ("relatorios", "view_cluster"),
    ("relatorios", "view_webhook"),
    ("relatorios", "view_entrega"),
    ("relatorios", "reenviar_entrega"),
)
PERMISSOES = (*ANTES, ("relatorios", "definir_dominios_email"))


def ampliar_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, PERMISSOES)


def reduzir_grupo(apps, schema_editor):
    from relatorios.models.permissoes import criar_grupo_suporte

    criar_grupo_suporte(apps, ANTES)


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", '0021_replica_vista_pelo_cluster'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="tenant",
            options={
                "ordering": ["nome"],
                "permissions": [
                    (
                        "definir_dominios_email",
                        "Pode definir os domínios de e-mail permitidos do tenant",
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="tenant",
            name="dominios_email",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(ampliar_grupo, reduzir_grupo),
    ]
