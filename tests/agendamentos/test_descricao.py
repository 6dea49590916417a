"""A schedule's cron in words (pt-BR), on the tenant's clock."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from relatorios.agendamentos import agenda
from relatorios.models.cron import descrever, em_palavras
from tests import helpers


@pytest.mark.parametrize(
    ("cron", "palavras"),
    [
        ("0 3 1 * *", "às 03:00, no dia 1 do mês"),
        ("0 3 L * *", "às 03:00, no último dia do mês"),
        ("0 7 * * *", "às 07:00, a cada dia"),
        (
            "30 6 * * 1,3,5",
            "às 06:30, somente de segunda-feira, quarta-feira, e sexta-feira",
        ),
        ("0 6 * * 1-5", "às 06:00, de segunda-feira a sexta-feira"),
        ("0 3 15 1,7 *", "às 03:00, no dia 15 do mês, somente em janeiro e julho"),
        ("0 3 * * 0", "às 03:00, somente de domingo"),
        ("0 3 * * 5#2", "às 03:00, na segunda sexta-feira do mês"),
        # crontab(5)'s nicknames, which croniter (and so the service) accepts.
        ("@daily", "às 00:00, a cada dia"),
        ("@monthly", "às 00:00, no dia 1 do mês"),
        # croniter's sixth field is the second (RELATORIOS_CRON_SEGUNDOS).
        ("0 3 1 * * 30", "às 03:00:30, no dia 1 do mês"),
    ],
)
def test_cron_em_palavras(cron: str, palavras: str) -> None:
    assert em_palavras(cron) == palavras


def test_cron_que_a_biblioteca_nao_le_aparece_como_cron() -> None:
    # A cron cron-descriptor cannot read (croniter's hashed minute): the
    # screen says the cron rather than fail.
    assert em_palavras("H 3 * * *") == "conforme o cron «H 3 * * *»"


def test_frase_tem_o_fuso_e_o_proximo_disparo_no_relogio_do_tenant() -> None:
    # 08:00 UTC is 03:00 in New York in January (UTC-5) and 04:00 in
    # July (UTC-4): the next firing is shown on the tenant's clock.
    inverno = datetime(2027, 1, 1, 8, tzinfo=UTC)
    verao = datetime(2027, 7, 1, 8, tzinfo=UTC)

    assert descrever("0 3 1 * *", "America/New_York", inverno) == (
        "às 03:00, no dia 1 do mês (America/New_York); próximo: 01/01/2027 03:00"
    )
    assert descrever("0 3 1 * *", "America/New_York", verao).endswith(
        "próximo: 01/07/2027 04:00"
    )
    assert descrever("0 3 1 * *", "Europe/Lisbon", None) == (
        "às 03:00, no dia 1 do mês (Europe/Lisbon); sem próximo disparo"
    )


@pytest.mark.django_db
def test_descricao_do_agendamento_segue_o_proximo_disparo() -> None:
    tenant = helpers.criar_tenant("Rede SP", fuso="America/Sao_Paulo")
    agendamento = helpers.criar_agendamento(tenant)
    proximo = agendamento.proximo_disparo
    assert proximo is not None
    local = proximo.astimezone(ZoneInfo("America/Sao_Paulo"))

    assert agendamento.descricao == (
        "às 03:00, no dia 1 do mês (America/Sao_Paulo); "
        f"próximo: {local:%d/%m/%Y} 03:00"
    )
    agenda.pausar(agendamento_id=agendamento.pk)
    agendamento.refresh_from_db()
    assert agendamento.descricao.endswith("; sem próximo disparo")
