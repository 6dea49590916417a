# Report chunks reused across jobs (issue 34, section 1): the chunk store,
# the per-tenant reuse counts, the ERP data versions, the function reading
# them and the triggers on every erp_* table bumping them in the writer's
# transaction (relatorios/jobs/reuso.py says how they make reuse exact).

import django.db.models.deletion
from django.db import migrations, models

from relatorios.banco.funcoes import instalar

# Written out, not imported from relatorios.models.partes: a migration
# installs what it installed when it was released.
_PERIODO = {
    "erp_lojas": "",
    "erp_vendedores": "",
    "erp_produtos": "",
    "erp_vendas": "date_trunc('month', data_hora AT TIME ZONE 'UTC')::date",
    "erp_devolucoes": "date_trunc('month', data_hora AT TIME ZONE 'UTC')::date",
    "erp_movimentos_estoque": "date_trunc('month', data::timestamp)::date",
}
_EVENTOS = {
    "insert": ("INSERT", "REFERENCING NEW TABLE AS novas"),
    "update": ("UPDATE", "REFERENCING OLD TABLE AS velhas NEW TABLE AS novas"),
    "delete": ("DELETE", "REFERENCING OLD TABLE AS velhas"),
    "truncate": ("TRUNCATE", ""),
}


def _gatilhos() -> str:
    comandos = []
    for tabela, periodo in _PERIODO.items():
        argumento = periodo.replace("'", "''")
        for nome, (evento, transicao) in _EVENTOS.items():
            comandos.append(
                f"CREATE TRIGGER {tabela}_versao_{nome} AFTER {evento}"
                f" ON {tabela} {transicao} FOR EACH STATEMENT"
                f" EXECUTE FUNCTION relatorios_erp_versionar('{argumento}');"
            )
    return "\n".join(comandos)


def _sem_gatilhos() -> str:
    return "\n".join(
        f"DROP TRIGGER IF EXISTS {tabela}_versao_{nome} ON {tabela};"
        for tabela in _PERIODO
        for nome in _EVENTOS
    )


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0030_eventos_sem_trava"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReusoDoTenant",
            fields=[
                (
                    "tenant",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="relatorios.tenant",
                    ),
                ),
                ("acertos", models.BigIntegerField(default=0)),
                ("falhas", models.BigIntegerField(default=0)),
                ("guardadas", models.BigIntegerField(default=0)),
                ("despejadas", models.BigIntegerField(default=0)),
                ("atualizado_em", models.DateTimeField()),
            ],
            options={
                "verbose_name": "reuso do tenant",
                "verbose_name_plural": "reuso dos tenants",
                "db_table": "relatorio_reuso_tenants",
            },
        ),
        migrations.CreateModel(
            name="VersaoErp",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("tenant_id", models.BigIntegerField()),
                ("tabela", models.TextField()),
                ("mes", models.DateField()),
                ("versao", models.BigIntegerField()),
            ],
            options={
                "verbose_name": "versão dos dados do ERP",
                "verbose_name_plural": "versões dos dados do ERP",
                "db_table": "relatorio_versoes_erp",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant_id", "tabela", "mes"),
                        name="relatorio_versoes_erp_chave",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ParteGuardada",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("tipo", models.TextField()),
                ("chave", models.TextField()),
                ("parte", models.JSONField()),
                ("parcial", models.TextField()),
                ("versoes", models.JSONField()),
                ("tamanho", models.BigIntegerField()),
                ("usos", models.BigIntegerField(default=0)),
                ("criado_em", models.DateTimeField()),
                ("usado_em", models.DateTimeField()),
                (
                    "tenant",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="relatorios.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "parte guardada",
                "verbose_name_plural": "partes guardadas",
                "db_table": "relatorio_partes",
                "indexes": [
                    models.Index(
                        fields=["tenant", "usado_em"], name="relatorio_partes_uso"
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "chave"), name="relatorio_partes_chave"
                    )
                ],
            },
        ),
        instalar(
            "relatorios_versoes_erp",
            "eea2a204f6e849c41d953d76d977fb8e668d74764ab7067cdc1d70bc4ead28b4",
            desfazer=(
                "DROP FUNCTION relatorios_versoes_erp"
                "(bigint, text[], text[], timestamptz, timestamptz)"
            ),
        ),
        instalar(
            "relatorios_erp_versionar",
            "ea50c21dca3bccf140339835d0e3f55c3e25817bf82531df6477bede003f54ff",
            desfazer="DROP FUNCTION relatorios_erp_versionar()",
        ),
        migrations.RunSQL(_gatilhos(), _sem_gatilhos()),
    ]
