# Live events without the commit-time serialization: relatorios_publicar no
# longer takes a database-wide advisory lock nor NOTIFYs (both made every
# job-changing COMMIT wait for the one before it); it only stores the row.
# Each events process now reads relatorio_eventos in id order and waits,
# boundedly, for ids taken by commits still in flight
# (relatorios/eventos/central.py).

from django.db import migrations

from relatorios.banco.funcoes import instalar, ler


class Migration(migrations.Migration):
    dependencies = [
        ("relatorios", "0029_comentarios_das_funcoes"),
    ]

    operations = [
        instalar(
            "relatorios_publicar",
            "16eacd2e1963938b70f73d62e52ad03ad865210435b214104a824640d766ed4b",
            desfazer=ler(
                "relatorios_publicar",
                "596c8650a1631c242a7a33be69bdb2f0a3113d817ad1c0cebe0027c329678f92",
            ),
        ),
    ]
