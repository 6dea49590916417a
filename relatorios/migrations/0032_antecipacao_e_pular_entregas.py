# Computing reports ahead of their requests (issue 34 §3, jobs.antecipacao),
# and schedules that skip unchanged deliveries (§4, agendamentos.entregas).
#
# relatorio_jobs gains `antecipado_em` (computed ahead, by the pass) and
# `pedido_em` (first asked for: the insert's time for an asked job, the first
# request it answered for one computed ahead), the history the pass learns
# from. Existing jobs were all asked for: their `pedido_em` is their
# `criado_em`. Tenants gain the switch `antecipar`; relatorio_antecipacao
# holds each tenant's precision and recall as the last pass measured them,
# relatorio_padroes_desligados the patterns its managers switched off.
#
# The submit's function takes `p_antecipado` (no message for such a job, the
# two columns written) and the claim's `p_max_antecipados` (a job computed
# ahead runs only in idle capacity, relatorios_ocioso, which the dispatch
# shares): both signatures change, so the old ones are dropped first, and the
# reverse drops the new ones.

import django.db.models.deletion
from django.db import migrations, models

import relatorios.models.jobs
from relatorios.banco.funcoes import instalar, ler

SUBMETER_ANTIGA = """
DROP FUNCTION IF EXISTS relatorios_submeter(
    bigint, text, bigint, text, jsonb, bigint, text[], bigint, bigint, text, text,
    text)
"""
SUBMETER_NOVA = """
DROP FUNCTION IF EXISTS relatorios_submeter(
    bigint, text, bigint, text, jsonb, bigint, text[], bigint, bigint, text, text,
    text, boolean)
"""
REIVINDICAR_ANTIGA = (
    "DROP FUNCTION IF EXISTS relatorios_reivindicar(bigint, bigint, text)"
)
REIVINDICAR_NOVA = (
    "DROP FUNCTION IF EXISTS relatorios_reivindicar(bigint, bigint, text, bigint)"
)


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0031_reuso_de_partes"),
    ]

    operations = [
        migrations.AddField(
            model_name="relatoriojob",
            name="antecipado_em",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="relatoriojob",
            name="pedido_em",
            field=models.DateTimeField(
                blank=True, db_default=relatorios.models.jobs.Agora(), null=True
            ),
        ),
        migrations.RunSQL(
            "UPDATE relatorio_jobs SET pedido_em = criado_em",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AddField(
            model_name="tenant",
            name="antecipar",
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.CreateModel(
            name="IndicadorDeAntecipacao",
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
                ("assentados", models.IntegerField(default=0)),
                ("aproveitados", models.IntegerField(default=0)),
                ("pedidos", models.IntegerField(default=0)),
                ("imediatos", models.IntegerField(default=0)),
                ("padroes_parados", models.IntegerField(default=0)),
                ("calculado_em", models.DateTimeField()),
            ],
            options={
                "verbose_name": "indicador de antecipação",
                "verbose_name_plural": "indicadores de antecipação",
                "db_table": "relatorio_antecipacao",
            },
        ),
        migrations.CreateModel(
            name="PadraoDesligado",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("tipo", models.TextField()),
                ("periodo", models.TextField()),
                ("resto", models.JSONField()),
                ("desligado_em", models.DateTimeField(auto_now_add=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="relatorios.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "padrão não antecipado",
                "verbose_name_plural": "padrões não antecipados",
                "db_table": "relatorio_padroes_desligados",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "tipo", "periodo", "resto"),
                        name="relatorio_padroes_desligados_unico",
                    )
                ],
            },
        ),
        migrations.AddIndex(
            model_name="relatoriojob",
            index=models.Index(
                condition=models.Q(("antecipado_em__isnull", False)),
                fields=["tenant", "antecipado_em"],
                name="relatorio_jobs_antecipados",
            ),
        ),
        # Schedules that skip a delivery whose report is empty or the same as
        # the last one sent (agendamentos.entregas).
        migrations.AddField(
            model_name="agendamento",
            name="pular",
            field=models.TextField(
                choices=[
                    ("nunca", "enviar sempre"),
                    ("vazio", "não enviar um relatório vazio"),
                    ("igual", "não enviar um relatório igual ao último enviado"),
                    ("vazio_ou_igual", "não enviar um relatório vazio nem igual"),
                ],
                db_default="nunca",
                default="nunca",
            ),
        ),
        migrations.AddField(
            model_name="ocorrencia",
            name="pulada_por",
            field=models.TextField(
                blank=True,
                choices=[
                    ("vazio", "relatório vazio"),
                    ("igual", "igual ao último enviado"),
                ],
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="ocorrencia",
            name="resultado_md5",
            field=models.CharField(blank=True, max_length=32, null=True),
        ),
        migrations.RunSQL(SUBMETER_ANTIGA, reverse_sql=SUBMETER_NOVA),
        instalar(
            "relatorios_submeter",
            "b6385b6315d972b435f81c6e0f6f968545f32f60c790ae45ca6bb1cb30a7b91b",
            desfazer=ler(
                "relatorios_submeter",
                "706a853b766d99f78ca384d7ed12b8fe9539178a3b03d26c3f43c2eb9396626b",
            ),
        ),
        instalar(
            "relatorios_ocioso",
            "b4e2c3f955d0c942691b22c5d49ff2e7df47b839ca1e1039ef13acc7882a13e6",
            desfazer="DROP FUNCTION IF EXISTS relatorios_ocioso(bigint, bigint)",
        ),
        migrations.RunSQL(REIVINDICAR_ANTIGA, reverse_sql=REIVINDICAR_NOVA),
        instalar(
            "relatorios_reivindicar",
            "8e0064f26505a76e8d5cac40e3f985da930b85c6bdc5eee7e9625ff08ccbb139",
            desfazer=ler(
                "relatorios_reivindicar",
                "250752263b1f4508b1475decaaf051573d6fe270f0a18516b03e469583abb116",
            ),
        ),
    ]
