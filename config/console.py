"""The development email backend: Django's console backend, without the
attachments' base64.

`make run` prints every email the demo sends; a scheduled report's .xlsx,
base64-encoded, filled the terminal with pages of noise. Each attachment is
printed as one line naming it and its size; the headers, the text and the
HTML are as sent. Only the printout changes: the message itself is left as
it was."""

from __future__ import annotations

from typing import Any

from django.core.mail.backends import console


class EmailNoConsole(console.EmailBackend):
    def write_message(self, message: Any) -> None:
        anexos = list(message.attachments)
        message.attachments = [_resumo(anexo) for anexo in anexos]
        try:
            super().write_message(message)
        finally:
            message.attachments = anexos


def _resumo(anexo: Any) -> Any:
    """A (name, content, type) attachment as a one-line text one; a MIME part
    already built is left alone."""
    if not isinstance(anexo, tuple) or len(anexo) != 3:
        return anexo
    nome, conteudo, tipo = anexo
    tamanho = len(conteudo.encode() if isinstance(conteudo, str) else conteudo)
    return (
        f"{nome}.txt",
        f"[anexo {nome} ({tipo}, {tamanho} bytes) omitido na impressão]\n",
        "text/plain",
    )
