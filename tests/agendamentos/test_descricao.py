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
        # The four, as a Brazilian manager reads them.
        ("0 7 * * 1-5", "de segunda a sexta, às 07:00"),
        ("*/15 * * * *", "a cada 15 minutos"),
        ("30 22 * * *", "todos os dias às 22:30"),
        ("0 3 1,15 * *", "nos dias 1 e 15 de cada mês, às 03:00"),
        # Times of day.
        ("0 7 * * *", "todos os dias às 07:00"),
        ("0 8,12,18 * * *", "todos os dias às 08:00, 12:00 e 18:00"),
        ("15,45 9 * * *", "todos os dias às 09:15 e 09:45"),
        ("0 0 * * *", "todos os dias às 00:00"),
        # Every N minutes or hours, all day or within hours.
        ("* * * * *", "a cada minuto"),
        ("*/5 * * * *", "a cada 5 minutos"),
        ("*/7 * * * *", "a cada 7 minutos"),
        ("0 * * * *", "a cada hora"),
        ("30 * * * *", "a cada hora, aos 30 minutos"),
        ("0 */2 * * *", "a cada 2 horas"),
        ("10 */6 * * *", "a cada 6 horas, aos 10 minutos"),
        ("0 8-18 * * *", "a cada hora, das 08:00 às 18:00"),
        (
            "*/15 8-18 * * 1-5",
            "de segunda a sexta, a cada 15 minutos, das 08:00 às 18:45",
        ),
        ("*/30 * * * 1-5", "de segunda a sexta, a cada 30 minutos"),
        # Weekdays.
        ("0 6 * * 1-5", "de segunda a sexta, às 06:00"),
        ("0 7 * * mon-fri", "de segunda a sexta, às 07:00"),
        ("30 6 * * 1,3,5", "às segundas, quartas e sextas, às 06:30"),
        ("0 3 * * 0", "aos domingos, às 03:00"),
        ("0 3 * * 7", "aos domingos, às 03:00"),
        ("0 9 * * 1", "às segundas, às 09:00"),
        ("0 9 * * 5,6", "às sextas e aos sábados, às 09:00"),
        ("0 7 * * 6,0", "nos fins de semana, às 07:00"),
        ("0 7 * * 2-4", "de terça a quinta, às 07:00"),
        ("0 7 * * 0-6", "todos os dias às 07:00"),
        ("0 3 * * 5#2", "na segunda sexta-feira do mês, às 03:00"),
        ("0 3 * * 6#1", "no primeiro sábado do mês, às 03:00"),
        ("0 3 * * 5L", "na última sexta-feira do mês, às 03:00"),
        # Days of the month and months.
        ("0 3 1 * *", "no dia 1 de cada mês, às 03:00"),
        ("0 3 L * *", "no último dia de cada mês, às 03:00"),
        ("0 9 1-7 * *", "do dia 1 ao dia 7 de cada mês, às 09:00"),
        ("0 3 1,10,20 * *", "nos dias 1, 10 e 20 de cada mês, às 03:00"),
        ("0 3 15 1,7 *", "no dia 15 de janeiro e julho, às 03:00"),
        ("0 0 1 1 *", "no dia 1 de janeiro, às 00:00"),
        ("0 8 * 12 *", "todos os dias de dezembro, às 08:00"),
        # crontab(5)'s nicknames, which croniter (and so the service) accepts.
        ("@daily", "todos os dias às 00:00"),
        ("@monthly", "no dia 1 de cada mês, às 00:00"),
        ("@hourly", "a cada hora"),
        ("@weekly", "aos domingos, às 00:00"),
        # croniter's sixth field is the second (RELATORIOS_CRON_SEGUNDOS).
        ("0 3 1 * * 30", "no dia 1 de cada mês, às 03:00:30"),
        # Shapes this layer leaves to cron-descriptor, its Lisbon turns gone.
        ("0 0 */2 * *", "às 00:00, a cada 2 dias"),
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
        "no dia 1 de cada mês, às 03:00 (America/New_York); próximo: 01/01/2027 03:00"
    )
    assert descrever("0 3 1 * *", "America/New_York", verao).endswith(
        "próximo: 01/07/2027 04:00"
    )
    assert descrever("0 3 1 * *", "Europe/Lisbon", None) == (
        "no dia 1 de cada mês, às 03:00 (Europe/Lisbon); sem próximo disparo"
    )


@pytest.mark.django_db
def test_descricao_do_agendamento_segue_o_proximo_disparo() -> None:
    tenant = helpers.criar_tenant("Rede SP", fuso="America/Sao_Paulo")
    agendamento = helpers.criar_agendamento(tenant)
    proximo = agendamento.proximo_disparo
    assert proximo is not None
    local = proximo.astimezone(ZoneInfo("America/Sao_Paulo"))

    assert agendamento.descricao == (
        "no dia 1 de cada mês, às 03:00 (horário de Brasília); "
        f"próximo: {local:%d/%m/%Y} 03:00"
    )
    agenda.pausar(agendamento_id=agendamento.pk)
    agendamento.refresh_from_db()
    assert agendamento.descricao.endswith("; sem próximo disparo")
