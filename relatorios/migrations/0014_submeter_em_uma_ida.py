# A new submit's writes in one round trip (issue 11): the store check, the
# tenant lock, the occupancy count, seed 000's upsert and the queue message,
# in one server-side function that `jobs.pedidos.submeter` calls with one
# statement. It used to be six round trips (BEGIN, lock, count, upsert, the
# message through django-q2's ORM, COMMIT) after the read by chave.
#
# Why a function and not one statement of CTEs: a statement sees the
# database as of its start, so a count in the same statement as the lock
# would not see what a concurrent submit committed while we waited for the
# lock; the caps would overshoot. In a VOLATILE plpgsql function each
# statement takes a new snapshot, so the count after the lock sees it, as the
# separate statements did.
#
# The function's source is relatorios/banco/sql/relatorios_submeter.sql;
# this migration installs the version whose sha256 it pins
# (relatorios/banco/funcoes.py). `jobs.suporte.RECOMECO` is the same list of
# columns for the support's rerun.

from django.db import migrations

from relatorios.banco.funcoes import instalar

DESFAZER = """
DROP FUNCTION IF EXISTS relatorios_submeter(
    bigint, text, bigint, text, jsonb, bigint, text[], bigint, bigint, text, text,
    text)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0013_request_id"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        instalar(
            "relatorios_submeter",
            "8f0b7fc1f01b56b045e38aa84367ce2c9c76d3f8b370db5331350cb01a63657a",
            desfazer=DESFAZER,
        )
    ]
