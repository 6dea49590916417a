"""Report requests and jobs: submitting (one operation per type), the
job's status and its CSV.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.serializers import PolymorphicProxySerializerExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers

from relatorios import tipos
from relatorios.api.esquema.comum import (
    COMUNS,
    DOWNLOADS,
    E400,
    E404,
    E413,
    cabecalhos,
    codigo_de_loja,
    erro,
    location,
    retry_after,
)
from relatorios.apresentacao import excel
from relatorios.models import EstadoDoJob

# The job shapes' `status` choices (named in ENUM_NAME_OVERRIDES).
STATUS_EM_ANDAMENTO = [EstadoDoJob.PENDENTE.value, EstadoDoJob.EXECUTANDO.value]
STATUS_PRONTO = [EstadoDoJob.PRONTO.value]
STATUS_FALHOU = [EstadoDoJob.FALHOU.value]


@extend_schema_field(
    {
        "type": "string",
        "anyOf": [{"format": "date"}, {"format": "date-time"}],
        "description": (
            "`2026-01-05` ou data e hora ISO 8601, da qual vale a data em UTC."
        ),
        "example": "2026-01-01",
    }
)
class CampoData(serializers.CharField):
    pass


class ParametrosSerializer(serializers.Serializer):
    # The parameters of every report type.

    inicio = CampoData()
    fim = CampoData()
    # null is taken as absent (normalizacao.normalizar): documented as such,
    # or a client sending it would be told it is invalid when it is not.
    agrupar = serializers.ChoiceField(
        choices=["dia", "mes"],
        required=False,
        allow_null=True,
        help_text="Padrão (ausente ou null): `dia`.",
    )
    lojas = serializers.ListField(
        child=codigo_de_loja(),
        required=False,
        allow_null=True,
        help_text="Códigos de loja do tenant; ausente, null ou `[]`: todas.",
    )
    notificar_email = serializers.BooleanField(
        required=False,
        help_text=(
            "Um e-mail ao solicitante quando o job terminar; não é parâmetro do "
            "relatório (não muda qual job responde). 400 nomeando "
            "`notificar_email` se o usuário não tem e-mail, ou se o seu e-mail é "
            "recusado pelas regras dos destinatários (as de `destinatarios` dos "
            "agendamentos, com os domínios permitidos da empresa)."
        ),
    )


class JobAceitoSerializer(serializers.Serializer):
    # 202: the job exists and is pending or running.

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_EM_ANDAMENTO)
    progresso = serializers.IntegerField(min_value=0, max_value=100)
    criado_em = serializers.DateTimeField()


class PartesFeitasSerializer(serializers.Serializer):
    feitas = serializers.IntegerField(
        min_value=1, help_text="Partes (pedaços do período) já calculadas."
    )
    total = serializers.IntegerField(min_value=1, help_text="Partes do pedido.")


class CobreSerializer(serializers.Serializer):
    inicio = serializers.DateField()
    fim = serializers.DateField()


@extend_schema_field(
    {
        "type": "object",
        "description": (
            "As partes prontas combinadas como o tipo combina o resultado final: "
            "a forma é a do `resultado` do tipo (veja a operação que o pede), "
            "com as linhas e os totais só das partes prontas."
        ),
    }
)
class ResultadoDasPartes(serializers.JSONField):
    pass


class ResultadoParcialSerializer(serializers.Serializer):
    # A running job's chunks done so far, combined (relatorios/jobs/parcial.py).

    partes = PartesFeitasSerializer()
    cobre = CobreSerializer(
        allow_null=True,
        help_text=(
            "O trecho do período que as partes prontas cobrem, do início do "
            "pedido ao fim da última parte pronta; null quando as partes não "
            "são trechos do período (as fontes de números do `fechamento`)."
        ),
    )
    resultado = ResultadoDasPartes()


class JobEmAndamentoSerializer(serializers.Serializer):
    # Status of a pending or running job; a retry shows when it is due.

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_EM_ANDAMENTO)
    progresso = serializers.IntegerField(min_value=0, max_value=100)
    tentativas = serializers.IntegerField(min_value=0)
    proxima_tentativa_em = serializers.DateTimeField(allow_null=True)
    resultado_parcial = ResultadoParcialSerializer(
        required=False,
        help_text=(
            "Só em `executando`, depois que a primeira parte terminou (e com "
            "`RELATORIOS_RESULTADO_PARCIAL` ligado): o que já foi calculado. "
            "Não é o resultado final: ele muda a cada parte, e só `pronto` "
            "traz o `resultado`."
        ),
    )


class JobFalhouSerializer(serializers.Serializer):
    # A failed job and a reason a client can show (never a traceback).

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_FALHOU)
    erro = serializers.CharField()


def _ref(nome: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{nome}"}


def _nome_do_resultado(tipo: str) -> str:
    # The component name drf-spectacular gives the type's `resultado`.
    return tipos.obter(tipo).resultado.__name__.removesuffix("Serializer")


def _camelo(tipo: str) -> str:
    return "".join(p.capitalize() for p in re.split(r"[^A-Za-z0-9]+", tipo) if p)


@extend_schema_field(
    {"type": "object", "description": "O resultado; a forma depende do tipo."}
)
class ResultadoLivre(serializers.JSONField):
    pass


class JobProntoSerializer(serializers.Serializer):
    # A finished job with its result (money as strings).

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_PRONTO)
    resultado = ResultadoLivre()
    concluido_em = serializers.DateTimeField()
    expira_em = serializers.DateTimeField()
    url = serializers.CharField(
        help_text="O resultado em CSV: `/relatorios/jobs/<id>/resultado.csv`."
    )


@functools.cache
def _job_pronto_do_tipo(tipo: str) -> type[serializers.Serializer]:
    """JobPronto with the type's own `resultado` (one class per type, so the
    component is registered once)."""
    relatorio = tipos.registro().get(tipo)
    campo: Any = ResultadoLivre() if relatorio is None else relatorio.resultado()
    return type(
        f"JobPronto{_camelo(tipo)}Serializer",
        (JobProntoSerializer,),
        {"resultado": campo},
    )


@functools.cache
def _job_pronto_de_qualquer_tipo(registrados: tuple[str, ...]) -> Any:
    """JobPronto of the status answer, which does not name the type: its
    `resultado` is one of the registered types' (they differ in `totais`)."""
    # The components are registered by each type's submit operation.
    nomes = sorted({_nome_do_resultado(t) for t in registrados})
    campo = extend_schema_field({"oneOf": [_ref(nome) for nome in nomes]})(
        type("ResultadoDeUmTipo", (serializers.JSONField,), {})
    )()
    return type(
        "JobProntoSerializer",
        (JobProntoSerializer,),
        {"resultado": campo},
    )


class _EstadoDoJob(PolymorphicProxySerializer):
    """The status answer: one of three shapes, by `status`.

    Its `pronto` shape follows the registry, which settings can change (the
    tests' extra types): recomputed on every generation, where
    PolymorphicProxySerializer would keep the first answer of a callable.
    """

    @property
    def serializers(self) -> dict[str, Any]:
        # The three shapes have disjoint `status` enums: exactly one matches.
        pronto = _job_pronto_de_qualquer_tipo(tuple(sorted(tipos.registro())))
        return {
            EstadoDoJob.PENDENTE.value: JobEmAndamentoSerializer,
            EstadoDoJob.EXECUTANDO.value: JobEmAndamentoSerializer,
            EstadoDoJob.PRONTO.value: pronto,
            EstadoDoJob.FALHOU.value: JobFalhouSerializer,
        }

    @serializers.setter
    def serializers(self, valor: Any) -> None:
        pass


class _ExtensaoDoEstadoDoJob(PolymorphicProxySerializerExtension):
    """drf-spectacular maps a PolymorphicProxySerializer through an extension
    that matches its exact class only (`match_subclasses` is off): without
    this one, _EstadoDoJob was read as a serializer with no fields, and the
    status answer went into the contract with no body at all."""

    target_class = "relatorios.api.esquema.jobs._EstadoDoJob"


def _estado_do_job() -> PolymorphicProxySerializer:
    return _EstadoDoJob(
        component_name="EstadoDoJob", serializers={}, resource_type_field_name="status"
    )


class EsquemaDoSubmeter(AutoSchema):
    """`POST /relatorios/<tipo>`, documented once per registered type.

    The preprocessing hook (`so_a_api`) turns the one URL pattern into one
    path per type; this reads the type back from the path.
    """

    def _tipo(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def get_operation_id(self) -> str:
        return f"submeter_{self._tipo()}"

    def get_tags(self) -> list[str]:
        return ["relatórios"]

    def get_summary(self) -> str:
        tipo = tipos.registro().get(self._tipo())
        titulo = getattr(tipo, "titulo", self._tipo())
        return f"Pede o relatório {titulo}"

    def get_description(self) -> str:  # type: ignore[override]
        return (
            "202 com o job (novo, ou o mesmo pedido já pendente ou executando), "
            "ou 200 com o resultado quando o mesmo pedido já está pronto e "
            "válido. `Location` aponta o estado do job."
        )

    def get_request_serializer(self) -> Any:
        return ParametrosSerializer

    def get_examples(self) -> list[OpenApiExample]:
        return [
            OpenApiExample(
                "janeiro por dia",
                {
                    "inicio": "2026-01-01",
                    "fim": "2026-01-31",
                    "agrupar": "dia",
                    "lojas": ["L001", "L002"],
                },
                request_only=True,
            )
        ]

    def get_override_parameters(self) -> list[Any]:
        return cabecalhos(
            location(200, 202, descricao="O estado do job: `/relatorios/jobs/<id>`."),
            retry_after(202),
        )

    def get_response_serializers(self) -> Any:
        relatorio = tipos.registro().get(self._tipo())
        exemplo = {} if relatorio is None else relatorio.exemplo
        return {
            200: OpenApiResponse(
                _job_pronto_do_tipo(self._tipo()),
                description="O mesmo pedido já está pronto e não expirou.",
                examples=[
                    OpenApiExample(
                        "pronto",
                        {
                            "id": 17,
                            "status": "pronto",
                            "resultado": exemplo,
                            "concluido_em": "2026-12-02T14:25:44.102311Z",
                            "expira_em": "2026-12-03T14:25:44.102311Z",
                            "url": "/relatorios/jobs/17/resultado.csv",
                        },
                        response_only=True,
                        status_codes=["200"],
                    )
                ],
            ),
            202: OpenApiResponse(
                JobAceitoSerializer,
                description="Job novo, ou o mesmo pedido pendente ou executando.",
                examples=[
                    OpenApiExample(
                        "aceito",
                        {
                            "id": 17,
                            "status": "pendente",
                            "progresso": 0,
                            "criado_em": "2026-12-02T14:25:40.228326Z",
                        },
                        response_only=True,
                        status_codes=["202"],
                    )
                ],
            ),
            400: E400,
            413: E413,
            **COMUNS,
        }


_EXEMPLO_PARCIAL = {
    "agrupar": "mes",
    "linhas": [
        {
            "periodo": periodo,
            "loja": "L001",
            "loja_nome": "Loja Centro 001",
            "vendas": vendas,
            "quantidade": quantidade,
            "receita": receita,
        }
        for periodo, vendas, quantidade, receita in (
            ("2026-01", 10122, 21707, "2001534.67"),
            ("2026-02", 9870, 20911, "1950012.10"),
        )
    ],
    "totais": {"vendas": 19992, "quantidade": 42618, "receita": "3951546.77"},
}

status_do_job = extend_schema(
    operation_id="estado_do_job",
    tags=["relatórios"],
    summary="Estado de um job",
    description=(
        "`pendente`/`executando` com `Retry-After`; `pronto` com o resultado e a "
        "`url` do CSV; `falhou` com o motivo. Um job de outro tenant é 404. "
        "Um job `executando` com partes prontas traz também `resultado_parcial`: "
        "as partes prontas combinadas, que não são o resultado final."
    ),
    parameters=cabecalhos(retry_after(200, obrigatorio=False)),
    responses={
        200: OpenApiResponse(
            _estado_do_job(),
            description="O estado atual; a forma segue `status`.",
            examples=[
                OpenApiExample(
                    "executando",
                    {
                        "id": 17,
                        "status": "executando",
                        "progresso": 40,
                        "tentativas": 1,
                        "proxima_tentativa_em": None,
                    },
                ),
                OpenApiExample(
                    "executando, com partes prontas",
                    {
                        "id": 17,
                        "status": "executando",
                        "progresso": 16,
                        "tentativas": 1,
                        "proxima_tentativa_em": None,
                        "resultado_parcial": {
                            "partes": {"feitas": 2, "total": 12},
                            "cobre": {"inicio": "2026-01-01", "fim": "2026-02-28"},
                            "resultado": _EXEMPLO_PARCIAL,
                        },
                    },
                ),
                OpenApiExample(
                    "falhou",
                    {"id": 17, "status": "falhou", "erro": "TimeoutError: ..."},
                ),
            ],
        ),
        404: E404,
        **COMUNS,
    },
)

resultado_csv = extend_schema(
    operation_id="resultado_csv",
    tags=["relatórios"],
    summary="O resultado de um job pronto, em CSV",
    description=(
        "Linhas do resultado com cabeçalho, UTF-8, formatos pt-BR. Os erros são "
        "JSON como em toda a API."
    ),
    parameters=cabecalhos(),
    responses={
        (200, "text/csv"): OpenApiResponse(
            OpenApiTypes.STR, description="O arquivo (`Content-Disposition`)."
        ),
        404: E404,
        409: erro(
            "O job ainda não está pronto (ou falhou).",
            ("pendente", {"erro": "o relatório não está pronto (status: pendente)"}),
        ),
        **DOWNLOADS,
    },
)

resultado_xlsx = extend_schema(
    operation_id="resultado_xlsx",
    tags=["relatórios"],
    summary="O resultado de um job pronto, em Excel (.xlsx)",
    description=(
        "Uma planilha com números como números, datas como datas, dinheiro com "
        "formato de moeda, cabeçalho congelado e uma linha de totais com "
        "fórmulas `SUM`. Os erros são JSON como em toda a API.\n\n"
        "O arquivo de um resultado é gerado uma vez, no primeiro pedido, e "
        "servido do que foi guardado nos seguintes. Enquanto outro pedido o "
        "gera, a resposta é 503 (ou 429, se o mesmo cliente já gera outro "
        "arquivo) com `Retry-After`. Acima de `RELATORIOS_XLSX_MAX_LINHAS` "
        "linhas (250.000) não há planilha: baixe o CSV."
    ),
    parameters=cabecalhos(retry_after(503)),
    responses={
        (200, excel.TIPO_DE_CONTEUDO): OpenApiResponse(
            OpenApiTypes.BINARY, description="O arquivo (`Content-Disposition`)."
        ),
        404: E404,
        409: erro(
            "O job ainda não está pronto (ou falhou), ou o resultado é grande "
            "demais para uma planilha.",
            ("pendente", {"erro": "o relatório não está pronto (status: pendente)"}),
            (
                "grande demais",
                {
                    "erro": "o resultado tem 300000 linhas, acima do limite de "
                    "250000 para .xlsx: baixe o CSV"
                },
            ),
        ),
        **DOWNLOADS,
        429: erro(
            "Limite de pedidos por token excedido, ou o cliente já gera outro "
            "arquivo agora; `Retry-After` diz quando tentar de novo.",
            (
                "outro arquivo",
                {
                    "erro": "outro arquivo deste cliente está sendo gerado: tente "
                    "de novo em 5 s"
                },
            ),
        ),
        503: erro(
            "O arquivo está sendo gerado por outro pedido (ou este servidor gera "
            "outro agora); `Retry-After` diz quando tentar de novo.",
            (
                "sendo gerado",
                {"erro": "este arquivo está sendo gerado: tente de novo em 5 s"},
            ),
        ),
    },
)
