# The submit's and the claim's functions again, with comments that name the
# Python functions calling them today (jobs.pedidos, jobs.ciclo; the
# `services` module they named is gone). Nothing else changed in them.

from django.db import migrations

from relatorios.banco.funcoes import instalar, ler


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0028_aberturas"),
    ]

    operations = [
        instalar(
            "relatorios_submeter",
            "706a853b766d99f78ca384d7ed12b8fe9539178a3b03d26c3f43c2eb9396626b",
            desfazer=ler(
                "relatorios_submeter",
                "8f0b7fc1f01b56b045e38aa84367ce2c9c76d3f8b370db5331350cb01a63657a",
            ),
        ),
        instalar(
            "relatorios_reivindicar",
            "250752263b1f4508b1475decaaf051573d6fe270f0a18516b03e469583abb116",
            desfazer=ler(
                "relatorios_reivindicar",
                "57aeb949a3e275afeb59ce9ff724a223e2a19e33240d7677b2b40fcbe8c30d6e",
            ),
        ),
    ]
