# A worker's claim in one round trip (issue 11, B3): the tenant's lock, the
# guarded claim with the attempt's ledger row, and, when the tenant has no
# free slot, the loss of the job's message, in one server-side function that
# `jobs.ciclo.reivindicar` calls with one statement. It was four round trips
# (BEGIN, lock, claim, COMMIT). A function and not one statement for the
# reason migration 0014 gives: the count of running jobs must be taken in a
# snapshot after the lock, or two claims of one tenant could both see a slot.
#
# The function's source is relatorios/banco/sql/relatorios_reivindicar.sql;
# this migration installs the version whose sha256 it pins
# (relatorios/banco/funcoes.py).

from django.db import migrations

from relatorios.banco.funcoes import instalar

DESFAZER = "DROP FUNCTION IF EXISTS relatorios_reivindicar(bigint, bigint, text)"


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0014_submeter_em_uma_ida"),
    ]

    operations = [
        instalar(
            "relatorios_reivindicar",
            "57aeb949a3e275afeb59ce9ff724a223e2a19e33240d7677b2b40fcbe8c30d6e",
            desfazer=DESFAZER,
        )
    ]
