"""Output shapes of the report API (seed 000's bodies), built as dicts.

The bodies are a handful of attributes each; a DRF serializer per response
(an instance, its bound fields, `to_representation` walking them) was ~6% of
a status read's instructions for what four lines of code say. What each value
becomes is still DRF's own: datetimes go through a `DateTimeField`'s public
`to_representation` (ISO 8601, the current time zone, `Z` for UTC), and a
None stays None, as a serializer leaves it. tests/api/test_serializers.py
compares every body with DRF serializers of the same fields, and the OpenAPI
document declares these shapes (relatorios/api/esquema/jobs.py).
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject


class SerializerDeSaida(serializers.Serializer):
    """An output-only serializer whose fields are bound once per class (the
    schedules' and alerts' bodies: relatorios/api/agendamentos.py).

    DRF deep-copies every declared field for every serializer instance (a new
    Field.__init__ per field per response); in the profiles that was about an
    eighth of a request's Python time. These fields only turn attributes into
    JSON values: they keep no state per request (no context, no validation),
    so one bound set per class serves every response. `to_representation`
    is DRF's own loop over them (skipped fields, None left None).
    """

    _ligados: list[serializers.Field[Any, Any, Any, Any]] | None = None

    @classmethod
    def campos_ligados(cls) -> list[serializers.Field[Any, Any, Any, Any]]:
        ligados = cls.__dict__.get("_ligados")
        if ligados is None:
            # A template instance binds a private copy of the fields once;
            # two threads racing here each bind one, and either list is fine.
            modelo = cls()
            ligados = [c for c in modelo.fields.values() if not c.write_only]
            cls._ligados = ligados
        return ligados

    def to_representation(self, instance: Any) -> dict[str, Any]:
        corpo: dict[str, Any] = {}
        for campo in self.campos_ligados():
            try:
                valor = campo.get_attribute(instance)
            except SkipField:
                continue
            vazio = valor.pk if isinstance(valor, PKOnlyObject) else valor
            corpo[str(campo.field_name)] = (
                None if vazio is None else campo.to_representation(valor)
            )
        return corpo


# Unbound, stateless: its settings (format, time zone) are read per call.
_DATA_HORA = serializers.DateTimeField()


def data_hora(valor: Any) -> str | None:
    return None if valor is None else _DATA_HORA.to_representation(valor)


def _inteiro(valor: Any) -> int | None:
    return None if valor is None else int(valor)


def _texto(valor: Any) -> str | None:
    return None if valor is None else str(valor)


def corpo_aceito(job: Any) -> dict[str, Any]:
    """202 to a submit: the job exists and is pending or running."""
    return {
        "id": _inteiro(job.id),
        "status": _texto(job.status),
        "progresso": _inteiro(job.progresso),
        "criado_em": data_hora(job.criado_em),
    }


def corpo_em_andamento(job: Any) -> dict[str, Any]:
    """Status of a pending or running job; a retry shows when it is due.
    A running job with a chunk done adds its partial result (`jobs.parcial`),
    money already as strings, as the chunks hold it."""
    corpo = {
        "id": _inteiro(job.id),
        "status": _texto(job.status),
        "progresso": _inteiro(job.progresso),
        "tentativas": _inteiro(job.tentativas),
        "proxima_tentativa_em": data_hora(job.proxima_tentativa_em),
    }
    parcial = getattr(job, "parcial", None)
    if parcial is not None:
        corpo["resultado_parcial"] = parcial
    return corpo


def corpo_pronto(job: Any) -> dict[str, Any]:
    """A finished job with its result (money as strings, by the renderer)."""
    return {
        "id": _inteiro(job.id),
        "status": _texto(job.status),
        "resultado": job.resultado,
        "concluido_em": data_hora(job.concluido_em),
        "expira_em": data_hora(job.expira_em),
        # Seed 004's {status: "concluido", url: "..."}: the result as a CSV file.
        "url": reverse("resultado_csv", args=[job.id]),
    }


def corpo_falhou(job: Any) -> dict[str, Any]:
    """A failed job and a reason a client can show."""
    return {
        "id": _inteiro(job.id),
        "status": _texto(job.status),
        "erro": _texto(job.erro),
    }
