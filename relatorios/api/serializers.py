"""Output shapes of the report API (seed 000's bodies)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers


class JobAceitoSerializer(serializers.Serializer):
    """202 to a submit: the job exists and is pending or running."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    progresso = serializers.IntegerField()
    criado_em = serializers.DateTimeField()


class JobEmAndamentoSerializer(serializers.Serializer):
    """Status of a pending or running job; a retry shows when it is due."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    progresso = serializers.IntegerField()
    tentativas = serializers.IntegerField()
    proxima_tentativa_em = serializers.DateTimeField(allow_null=True)


class JobProntoSerializer(serializers.Serializer):
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


class JobFalhouSerializer(serializers.Serializer):
    """A failed job and a reason a client can show."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    erro = serializers.CharField()
