"""The schedule form's frequency picker: what cron each choice writes, and
which field an invalid choice names (the pages' and the admin's form)."""

from __future__ import annotations

from typing import Any

import pytest

from relatorios.agendamentos.entrada import AgendamentoForm

BASE = {
    "tipo": "vendas",
    "periodo": "mes_anterior",
    "prazo_minutos": "180",
    "agrupar": "mes",
    "recuperacao": "ultima",
}


def formulario(**seletor: Any) -> AgendamentoForm:
    return AgendamentoForm(BASE | seletor, lojas=[("L001", "Loja 1")])


@pytest.mark.parametrize(
    ("seletor", "cron"),
    [
        ({"frequencia": "diaria", "horario": "03:00"}, "0 3 * * *"),
        ({"frequencia": "diaria", "horario": "23:45"}, "45 23 * * *"),
        ({"frequencia": "diaria", "horario": "00:05"}, "5 0 * * *"),
        (
            {"frequencia": "semanal", "horario": "06:30", "dias_da_semana": ["1"]},
            "30 6 * * 1",
        ),
        (
            {
                "frequencia": "semanal",
                "horario": "06:30",
                "dias_da_semana": ["5", "1", "3"],
            },
            "30 6 * * 1,3,5",
        ),
        # A run of days is written as a range, as people write a cron.
        (
            {
                "frequencia": "semanal",
                "horario": "07:00",
                "dias_da_semana": ["1", "2", "3", "4", "5"],
            },
            "0 7 * * 1-5",
        ),
        (
            {
                "frequencia": "semanal",
                "horario": "07:00",
                "dias_da_semana": ["0", "1", "2", "3", "5", "6"],
            },
            "0 7 * * 0-3,5,6",
        ),
        (
            {"frequencia": "semanal", "horario": "07:00", "dias_da_semana": ["1", "2"]},
            "0 7 * * 1,2",
        ),
        # Sunday is cron's 0, listed last by the picker, first in the cron.
        (
            {"frequencia": "semanal", "horario": "07:00", "dias_da_semana": ["6", "0"]},
            "0 7 * * 0,6",
        ),
        ({"frequencia": "mensal", "horario": "03:00", "dia_do_mes": "1"}, "0 3 1 * *"),
        (
            {"frequencia": "mensal", "horario": "04:15", "dia_do_mes": "31"},
            "15 4 31 * *",
        ),
        ({"frequencia": "mensal", "horario": "03:00", "dia_do_mes": "L"}, "0 3 L * *"),
        ({"frequencia": "cron", "cron": "15 4 * * 2"}, "15 4 * * 2"),
        # Every N minutes or hours, from midnight.
        (
            {"frequencia": "intervalo", "intervalo": "15", "unidade": "minutos"},
            "*/15 * * * *",
        ),
        (
            {"frequencia": "intervalo", "intervalo": "2", "unidade": "horas"},
            "0 */2 * * *",
        ),
        (
            {"frequencia": "intervalo", "intervalo": "1", "unidade": "horas"},
            "0 * * * *",
        ),
        # Fields the chosen frequency does not use are ignored.
        (
            {
                "frequencia": "diaria",
                "horario": "08:00",
                "dias_da_semana": ["1"],
                "dia_do_mes": "L",
                "cron": "0 0 1 1 *",
            },
            "0 8 * * *",
        ),
    ],
)
def test_seletor_escreve_o_cron(seletor: dict[str, Any], cron: str) -> None:
    form = formulario(**seletor)

    assert form.is_valid(), form.errors
    assert form.argumentos()["cron"] == cron


@pytest.mark.parametrize(
    ("seletor", "campo", "mensagem"),
    [
        ({"horario": "03:00"}, "frequencia", "obrigatório"),
        ({"frequencia": "anual", "horario": "03:00"}, "frequencia", "válida"),
        ({"frequencia": "diaria"}, "horario", "informe o horário"),
        ({"frequencia": "diaria", "horario": "25:00"}, "horario", "hora válida"),
        ({"frequencia": "diaria", "horario": "3h"}, "horario", "hora válida"),
        (
            {"frequencia": "diaria", "horario": "03:00:30"},
            "horario",
            "só horas e minutos",
        ),
        (
            {"frequencia": "semanal", "horario": "03:00"},
            "dias_da_semana",
            "pelo menos um dia",
        ),
        (
            {"frequencia": "semanal", "horario": "03:00", "dias_da_semana": ["7"]},
            "dias_da_semana",
            "válida",
        ),
        (
            {"frequencia": "mensal", "horario": "03:00", "dia_do_mes": "32"},
            "dia_do_mes",
            "válida",
        ),
        (
            {"frequencia": "mensal", "horario": "03:00", "dia_do_mes": ""},
            "dia_do_mes",
            "escolha o dia do mês",
        ),
        ({"frequencia": "cron"}, "cron", "informe a expressão cron"),
        (
            {"frequencia": "intervalo", "intervalo": "25", "unidade": "minutos"},
            "intervalo",
            "dividem a hora",
        ),
        (
            {"frequencia": "intervalo", "intervalo": "5", "unidade": "horas"},
            "intervalo",
            "dividem o dia",
        ),
        ({"frequencia": "intervalo", "unidade": "minutos"}, "intervalo", "informe"),
        # A value sent is checked even where the frequency does not use it.
        (
            {"frequencia": "cron", "cron": "0 2 * * *", "horario": "99:99"},
            "horario",
            "hora válida",
        ),
        ({"frequencia": "cron", "cron": "0 3 * * " + "1," * 100}, "cron", "200"),
    ],
)
def test_escolha_invalida_nomeia_o_campo(
    seletor: dict[str, Any], campo: str, mensagem: str
) -> None:
    form = formulario(**seletor)

    assert not form.is_valid()
    assert list(form.errors) == [campo]
    assert mensagem in str(form.errors[campo])
