from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from relatorios.jobs import retencao
from relatorios.models import ParteGuardada, Tenant
from tests import processos
from tests.reuso.comum import com_vendas, relatorio


@pytest.mark.django_db
def test_parte_sem_uso_alem_da_retencao_e_apagada(tenant: Tenant) -> None:
    com_vendas(tenant)
    relatorio(tenant, inicio="2025-01-01", fim="2025-02-28")
    velha = ParteGuardada.objects.order_by("id").first()
    assert velha is not None
    ParteGuardada.objects.filter(pk=velha.pk).update(
        usado_em=timezone.now() - retencao.corte() - timedelta(minutes=1)
    )

    retencao.expurgar()

    assert list(ParteGuardada.objects.values_list("parte__inicio", flat=True)) == [
        "2025-02-01"
    ]


@pytest.mark.parametrize(
    ("nome", "valor"),
    [
        ("RELATORIOS_REUSO_PARTES", "talvez"),
        ("RELATORIOS_REUSO_ORCAMENTO_BYTES", "-1"),
        ("RELATORIOS_REUSO_ORCAMENTO_BYTES", "64MB"),
    ],
)
def test_ajuste_invalido_recusa_subir_dizendo_qual(nome: str, valor: str) -> None:
    saida = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=processos.RAIZ,
        env=processos.ambiente(**{nome: valor}),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert saida.returncode != 0
    assert nome in saida.stderr
    assert repr(valor) in saida.stderr
