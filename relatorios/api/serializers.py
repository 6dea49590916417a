"""Output shapes of the report API (seed 000's bodies)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers


class SerializerDeSaida(serializers.Serializer):
    """An output-only serializer whose fields are bound once per class.

    DRF deep-copies every declared field for every serializer instance (a new
    Field.__init__ per field per response); in the profiles of the submit and
    status endpoints that was about an eighth of a request's Python time.
    These fields only turn attributes into JSON values: they keep no state per
    request (no context, no validation), so one bound set per class serves
    every response, and DRF's own to_representation does the rest unchanged.
    """

    _ligados: list[serializers.Field[Any, Any, Any, Any]] | None = None

    @classmethod
    def _campos(cls) -> list[serializers.Field[Any, Any, Any, Any]]:
        ligados = cls.__dict__.get("_ligados")
        if ligados is None:
            # A template instance binds a private copy of the fields once;
            # two threads racing here each bind one, and either list is fine.
            modelo = cls()
            ligados = [c for c in modelo.fields.values() if not c.write_only]
            cls._ligados = ligados
        return ligados

    @property
    def _readable_fields(self) -> list[serializers.Field[Any, Any, Any, Any]]:
        # DRF only iterates it; the shared list is never changed.
        return self._campos()


class JobAceitoSerializer(SerializerDeSaida):
    """202 to a submit: the job exists and is pending or running."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    progresso = serializers.IntegerField()
    criado_em = serializers.DateTimeField()


class JobEmAndamentoSerializer(SerializerDeSaida):
    """Status of a pending or running job; a retry shows when it is due."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    progresso = serializers.IntegerField()
    tentativas = serializers.IntegerField()
    proxima_tentativa_em = serializers.DateTimeField(allow_null=True)


class JobProntoSerializer(SerializerDeSaida):
    """A finished job with its result (money as strings)."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    resultado = serializers.JSONField()
    concluido_em = serializers.DateTimeField()
    expira_em = serializers.DateTimeField()
    # Seed 004's {status: "concluido", url: "..."}: the result as a CSV file.
    url = serializers.SerializerMethodField()

    def get_url(self, job: Any) -> str:
        return reverse("resultado_csv", args=[job.id])


class JobFalhouSerializer(SerializerDeSaida):
    """A failed job and a reason a client can show."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    erro = serializers.CharField()
