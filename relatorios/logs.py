"""Log records with their structured fields (extra=...) printed as key=value."""

from __future__ import annotations

import logging

_CAMPOS_PADRAO = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class FormatadorChaveValor(logging.Formatter):
    """`... job iniciado job_id=12 tenant_id=3 tipo=vendas`: greppable and parseable."""

    def format(self, record: logging.LogRecord) -> str:
        linha = super().format(record)
        extras = {
            chave: valor
            for chave, valor in vars(record).items()
            if chave not in _CAMPOS_PADRAO and not chave.startswith("_")
        }
        if extras:
            linha += " " + " ".join(f"{k}={v}" for k, v in sorted(extras.items()))
        return linha
