"""How a schedule's input reads in a form: the pages' and the admin's alike."""

from __future__ import annotations

AJUDA_DO_CRON = (
    "Cinco campos: minuto hora dia-do-mês mês dia-da-semana, no fuso da sua "
    "empresa. Exemplos: «0 3 1 * *» todo dia 1 às 03:00; «30 6 * * 1» toda "
    "segunda às 06:30; «0 7 * * *» todo dia às 07:00."
)

# Errors of the service on fields a form does not have, shown where the
# person can fix them: a period too long for the type is the period's fault.
CAMPOS_EQUIVALENTES = {"inicio": "periodo", "fim": "periodo", "prazo": "prazo_minutos"}


def separar_por_virgula(texto: str) -> list[str]:
    """ "a@x.com, b@y.com" -> ["a@x.com", "b@y.com"] (blank items dropped)."""
    return [item.strip() for item in texto.replace(";", ",").split(",") if item.strip()]
