# relatorio_jobs is a queue table: every job is inserted, then updated four to
# six times within minutes, and the planner's view of how many rows are pending
# or running matters for every claim. PostgreSQL's defaults (analyze after 10%
# of the table changed, vacuum after 20%) mean, on ten million finished jobs,
# a million changes before the statistics move: a Monday burst would be
# planned with Sunday's numbers. Analyze after a fixed 5,000 changed rows and
# vacuum after 1% instead.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0005_historico_de_tentativas"),
    ]

    operations = [
        migrations.RunSQL(
            """
            ALTER TABLE relatorio_jobs SET (
                autovacuum_analyze_scale_factor = 0.0,
                autovacuum_analyze_threshold = 5000,
                autovacuum_vacuum_scale_factor = 0.01
            )
            """,
            """
            ALTER TABLE relatorio_jobs RESET (
                autovacuum_analyze_scale_factor,
                autovacuum_analyze_threshold,
                autovacuum_vacuum_scale_factor
            )
            """,
        ),
    ]
