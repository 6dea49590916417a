"""The OpenAPI 3 contract of the API: what each operation takes and answers.

The views stay thin: each wears one decorator from here (`@esquema.X`), and
the shapes below are documentation-only serializers. They are checked
against the real answers, not trusted: `tests/api/test_contrato.py` runs
schemathesis against a live server with this schema, and
`tests/api/test_openapi.py` fails when the committed `docs/openapi.yaml` drifts.

Submitting is one operation per registered report type (`submeter_vendas`,
...), not one `/relatorios/{tipo}` with an enum: each type's `200` carries
its own `resultado` shape, so a client generator gets one typed method and
one typed result per report, and a schema tool can check each result exactly.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers

from relatorios import tipos
from relatorios.models import Evento, Periodo, Recuperacao, Status
from relatorios.models.agendamentos import EstadoOcorrencia
from relatorios.tipos.normalizacao import CODIGO_LOJA_MAX

# --- Authentication -----------------------------------------------------------------


class EsquemaDoToken(OpenApiAuthenticationExtension):
    """`Authorization: Token <chave>`, described for the API's clients."""

    target_class = "relatorios.api.autenticacao.TokenComCache"
    name = "tokenAuth"
    # Above drf-spectacular's own TokenAuthentication extension (a superclass).
    priority = 1

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "`Token <chave>`: a chave que `manage.py criar_tenant` imprime. "
                "O tenant é o do usuário do token; nunca um parâmetro."
            ),
        }


# --- Headers ---------------------------------------------------------------------

_RETRY_AFTER = (
    "Segundos a esperar antes de consultar de novo (job em andamento) ou de "
    "repetir o pedido (429)."
)


def _location(*codigos: int, descricao: str) -> OpenApiParameter:
    return OpenApiParameter(
        "Location",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=list(codigos),
        required=True,
        description=descricao,
    )


def _retry_after(*codigos: int, obrigatorio: bool = True) -> OpenApiParameter:
    return OpenApiParameter(
        "Retry-After",
        OpenApiTypes.INT,
        OpenApiParameter.HEADER,
        response=list(codigos),
        required=obrigatorio,
        description=_RETRY_AFTER,
    )


_WWW_AUTHENTICATE = OpenApiParameter(
    "WWW-Authenticate",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[401],
    required=True,
    description="Sempre `Token`.",
)


def _cabecalhos(*proprios: OpenApiParameter) -> list[OpenApiParameter]:
    """An operation's own headers plus those of the answers every one gives."""
    return [*proprios, _retry_after(429), _WWW_AUTHENTICATE]


# --- Errors ------------------------------------------------------------------------


class ErroItemSerializer(serializers.Serializer):
    erro = serializers.CharField()
    campo = serializers.CharField(required=False)


class ErroSerializer(serializers.Serializer):
    # Every error of the API: {"erro"} and, for a bad field, {"campo"}.

    erro = serializers.CharField(help_text="O motivo, em português.")
    campo = serializers.CharField(
        required=False, help_text="O campo do corpo ou da consulta que está errado."
    )
    erros = ErroItemSerializer(
        many=True, required=False, help_text="Quando há mais de um erro."
    )


def _erro(descricao: str, *exemplos: tuple[str, dict[str, str]]) -> OpenApiResponse:
    return OpenApiResponse(
        ErroSerializer,
        description=descricao,
        examples=[OpenApiExample(nome, valor) for nome, valor in exemplos],
    )


E400 = _erro(
    "Corpo ou parâmetro inválido; `campo` diz qual.",
    (
        "inicio depois de fim",
        {"erro": "inicio deve ser anterior ou igual a fim", "campo": "inicio"},
    ),
    ("não é JSON", {"erro": "corpo inválido: envie um objeto JSON", "campo": "corpo"}),
)
E401 = _erro(
    "Sem token, ou token desconhecido.",
    (
        "sem token",
        {"erro": "credenciais ausentes: envie 'Authorization: Token <chave>'"},
    ),
)
E403 = _erro(
    "Usuário sem tenant (suporte).",
    (
        "sem tenant",
        {
            "erro": "usuário sem tenant: a API de relatórios é para usuários "
            "de um tenant"
        },
    ),
)
E404 = _erro(
    "Não existe, ou é de outro tenant (nunca 403: ids são sequenciais).",
    ("não encontrado", {"erro": "não encontrado"}),
)
E413 = _erro(
    "Corpo acima de RELATORIOS_CORPO_MAX_BYTES (256 KiB), recusado pelo "
    "Content-Length antes de ser lido.",
    ("grande demais", {"erro": "corpo grande demais: o limite é 262144 bytes"}),
)
E429 = _erro(
    "Limite de pedidos por token excedido (ou, ao submeter, de jobs pendentes "
    "do tenant); `Retry-After` diz quando tentar de novo.",
    (
        "limite por token",
        {"erro": "limite de 600 pedidos a cada 60 s excedido: tente de novo em 12 s"},
    ),
)

# Answered by every operation: authentication, tenant, the per-token limit.
COMUNS: dict[int, OpenApiResponse] = {401: E401, 403: E403, 429: E429}

# --- Report requests and jobs -------------------------------------------------------


def _codigo_de_loja() -> serializers.CharField:
    # normalizacao._lojas: stripped, 1 to CODIGO_LOJA_MAX characters, no
    # control characters.
    return serializers.CharField(
        min_length=1,
        max_length=CODIGO_LOJA_MAX,
        validators=[RegexValidator(_CODIGO_DE_LOJA)],
    )


_CODIGO_DE_LOJA = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"

# The job shapes' `status` choices (named in ENUM_NAME_OVERRIDES).
STATUS_EM_ANDAMENTO = [Status.PENDENTE.value, Status.EXECUTANDO.value]
STATUS_PRONTO = [Status.PRONTO.value]
STATUS_FALHOU = [Status.FALHOU.value]


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
        child=_codigo_de_loja(),
        required=False,
        allow_null=True,
        help_text="Códigos de loja do tenant; ausente, null ou `[]`: todas.",
    )
    notificar_email = serializers.BooleanField(
        required=False,
        help_text=(
            "Um e-mail ao solicitante quando o job terminar; não é parâmetro do "
            "relatório (não muda qual job responde)."
        ),
    )


class JobAceitoSerializer(serializers.Serializer):
    # 202: the job exists and is pending or running.

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_EM_ANDAMENTO)
    progresso = serializers.IntegerField(min_value=0, max_value=100)
    criado_em = serializers.DateTimeField()


class JobEmAndamentoSerializer(serializers.Serializer):
    # Status of a pending or running job; a retry shows when it is due.

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_EM_ANDAMENTO)
    progresso = serializers.IntegerField(min_value=0, max_value=100)
    tentativas = serializers.IntegerField(min_value=0)
    proxima_tentativa_em = serializers.DateTimeField(allow_null=True)


class JobFalhouSerializer(serializers.Serializer):
    # A failed job and a reason a client can show (never a traceback).

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_FALHOU)
    erro = serializers.CharField()


def _dinheiro(ajuda: str = "") -> serializers.DecimalField:
    # Money travels as a decimal string, never a float.
    return serializers.DecimalField(
        max_digits=20, decimal_places=2, coerce_to_string=True, help_text=ajuda
    )


class LinhaVendasSerializer(serializers.Serializer):
    periodo = serializers.CharField(help_text="`2026-01-05` (dia) ou `2026-01` (mês).")
    loja = serializers.CharField()
    loja_nome = serializers.CharField()
    vendas = serializers.IntegerField()
    quantidade = serializers.IntegerField()
    receita = _dinheiro()


class TotaisVendasSerializer(serializers.Serializer):
    vendas = serializers.IntegerField()
    quantidade = serializers.IntegerField()
    receita = _dinheiro()


class ResultadoVendasSerializer(serializers.Serializer):
    agrupar = serializers.ChoiceField(choices=["dia", "mes"])
    linhas = LinhaVendasSerializer(many=True)
    totais = TotaisVendasSerializer()


class LinhaComissoesSerializer(serializers.Serializer):
    periodo = serializers.CharField()
    vendedor_id = serializers.IntegerField()
    vendedor = serializers.CharField()
    taxa = serializers.DecimalField(
        max_digits=6, decimal_places=4, coerce_to_string=True
    )
    receita = _dinheiro()
    comissao = _dinheiro("round(receita × taxa, 2)")


class TotaisComissoesSerializer(serializers.Serializer):
    receita = _dinheiro()
    comissao = _dinheiro("A soma das linhas.")


class ResultadoComissoesSerializer(serializers.Serializer):
    agrupar = serializers.ChoiceField(choices=["dia", "mes"])
    linhas = LinhaComissoesSerializer(many=True)
    totais = TotaisComissoesSerializer()


class LinhaEstoqueSerializer(serializers.Serializer):
    loja = serializers.CharField()
    loja_nome = serializers.CharField()
    sku = serializers.CharField()
    produto = serializers.CharField()
    saldo_inicial = serializers.IntegerField()
    entradas = serializers.IntegerField()
    saidas = serializers.IntegerField()
    saldo_final = serializers.IntegerField()


class TotaisEstoqueSerializer(serializers.Serializer):
    saldo_inicial = serializers.IntegerField()
    entradas = serializers.IntegerField()
    saidas = serializers.IntegerField()
    saldo_final = serializers.IntegerField()


class ResultadoEstoqueSerializer(serializers.Serializer):
    linhas = LinhaEstoqueSerializer(many=True)
    totais = TotaisEstoqueSerializer()


# The built-in types' result shapes and README examples. A type without an
# entry (RELATORIOS_TIPOS_EXTRAS) is documented with a free-form `resultado`.
RESULTADOS: dict[str, tuple[type[serializers.Serializer], dict[str, Any]]] = {
    "vendas": (
        ResultadoVendasSerializer,
        {
            "agrupar": "mes",
            "linhas": [
                {
                    "periodo": "2026-01",
                    "loja": "L001",
                    "loja_nome": "Loja Centro 001",
                    "vendas": 10122,
                    "quantidade": 21707,
                    "receita": "2001534.67",
                }
            ],
            "totais": {"vendas": 10122, "quantidade": 21707, "receita": "2001534.67"},
        },
    ),
    "comissoes": (
        ResultadoComissoesSerializer,
        {
            "agrupar": "dia",
            "linhas": [
                {
                    "periodo": "2026-01-01",
                    "vendedor_id": 3,
                    "vendedor": "Vendedor L001-3",
                    "taxa": "0.0350",
                    "receita": "13544.94",
                    "comissao": "474.07",
                }
            ],
            "totais": {"receita": "13544.94", "comissao": "474.07"},
        },
    ),
    "estoque": (
        ResultadoEstoqueSerializer,
        {
            "linhas": [
                {
                    "loja": "L001",
                    "loja_nome": "Loja Centro 001",
                    "sku": "SKU00001",
                    "produto": "Camiseta modelo 1",
                    "saldo_inicial": 15160,
                    "entradas": 2225,
                    "saidas": 624,
                    "saldo_final": 16761,
                }
            ],
            "totais": {
                "saldo_inicial": 15160,
                "entradas": 2225,
                "saidas": 624,
                "saldo_final": 16761,
            },
        },
    ),
}


def _ref(nome: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{nome}"}


def _nome_do_resultado(tipo: str) -> str:
    # The component name drf-spectacular gives RESULTADOS[tipo][0].
    return RESULTADOS[tipo][0].__name__.removesuffix("Serializer")


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
    campo: Any = RESULTADOS[tipo][0]() if tipo in RESULTADOS else ResultadoLivre()
    return type(
        f"JobPronto{_camelo(tipo)}Serializer",
        (JobProntoSerializer,),
        {"resultado": campo},
    )


@functools.cache
def _job_pronto_de_qualquer_tipo(registrados: tuple[str, ...]) -> Any:
    """JobPronto of the status answer, which does not name the type: its
    `resultado` is one of the registered types' (they differ in `totais`)."""
    if any(t not in RESULTADOS for t in registrados):
        return JobProntoSerializer
    # The components are registered by each type's submit operation.
    campo = extend_schema_field(
        {"oneOf": [_ref(_nome_do_resultado(t)) for t in registrados]}
    )(type("ResultadoDeUmTipo", (serializers.JSONField,), {}))()
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
            Status.PENDENTE.value: JobEmAndamentoSerializer,
            Status.EXECUTANDO.value: JobEmAndamentoSerializer,
            Status.PRONTO.value: pronto,
            Status.FALHOU.value: JobFalhouSerializer,
        }

    @serializers.setter
    def serializers(self, valor: Any) -> None:
        pass


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
        return _cabecalhos(
            _location(200, 202, descricao="O estado do job: `/relatorios/jobs/<id>`."),
            _retry_after(202),
        )

    def get_response_serializers(self) -> Any:
        tipo = self._tipo()
        exemplo = RESULTADOS[tipo][1] if tipo in RESULTADOS else {}
        return {
            200: OpenApiResponse(
                _job_pronto_do_tipo(tipo),
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


status_do_job = extend_schema(
    operation_id="estado_do_job",
    tags=["relatórios"],
    summary="Estado de um job",
    description=(
        "`pendente`/`executando` com `Retry-After`; `pronto` com o resultado e a "
        "`url` do CSV; `falhou` com o motivo. Um job de outro tenant é 404."
    ),
    parameters=_cabecalhos(_retry_after(200, obrigatorio=False)),
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
    parameters=_cabecalhos(),
    responses={
        (200, "text/csv"): OpenApiResponse(
            OpenApiTypes.STR, description="O arquivo (`Content-Disposition`)."
        ),
        404: E404,
        409: _erro(
            "O job ainda não está pronto (ou falhou).",
            ("pendente", {"erro": "o relatório não está pronto (status: pendente)"}),
        ),
        **COMUNS,
    },
)

# --- Schedules and alerts -----------------------------------------------------------


class NovoAgendamentoSerializer(serializers.Serializer):
    nome = serializers.CharField(required=False, max_length=200, allow_blank=True)
    tipo = serializers.CharField(help_text="Um tipo de relatório registrado.")
    periodo = serializers.ChoiceField(choices=Periodo.choices)
    cron = serializers.CharField(
        help_text="Cinco campos (min hora dia mês semana), no fuso do tenant."
    )
    prazo_minutos = serializers.IntegerField(
        min_value=1, max_value=62 * 24 * 60, help_text="Prazo do alerta de ausência."
    )
    # The optional fields take null as absent (agendamentos.criar's defaults).
    agrupar = serializers.ChoiceField(
        choices=["dia", "mes"], required=False, allow_null=True
    )
    lojas = serializers.ListField(
        child=_codigo_de_loja(), required=False, allow_null=True
    )
    destinatarios = serializers.ListField(
        child=serializers.EmailField(), required=False, allow_null=True
    )
    recuperacao = serializers.ChoiceField(
        choices=Recuperacao.choices,
        required=False,
        allow_null=True,
        help_text="Padrão (ausente ou null): `ultima`.",
    )


class OcorrenciaSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    planejado_para = serializers.DateTimeField()
    prazo_em = serializers.DateTimeField()
    estado = serializers.ChoiceField(choices=EstadoOcorrencia.choices)
    motivo = serializers.CharField(allow_blank=True)
    params = serializers.DictField()
    job_id = serializers.IntegerField(allow_null=True)


class AgendamentoSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    nome = serializers.CharField(allow_blank=True)
    tipo = serializers.CharField()
    periodo = serializers.ChoiceField(choices=Periodo.choices)
    cron = serializers.CharField()
    prazo_minutos = serializers.IntegerField()
    agrupar = serializers.CharField()
    lojas = serializers.ListField(child=serializers.CharField())
    destinatarios = serializers.ListField(child=serializers.CharField())
    recuperacao = serializers.ChoiceField(choices=Recuperacao.choices)
    ativo = serializers.BooleanField()
    proximo_disparo = serializers.DateTimeField(allow_null=True)
    criado_em = serializers.DateTimeField()


class AgendamentoDetalheSerializer(AgendamentoSerializer):
    proximos_disparos = serializers.ListField(child=serializers.DateTimeField())
    ocorrencias = OcorrenciaSerializer(many=True, help_text="As 10 mais recentes.")


class ListaDeAgendamentosSerializer(serializers.Serializer):
    agendamentos = AgendamentoSerializer(many=True)


class AlertaSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agendamento_id = serializers.IntegerField()
    ocorrencia_id = serializers.IntegerField()
    planejado_para = serializers.DateTimeField()
    prazo_em = serializers.DateTimeField()
    job_id = serializers.IntegerField(allow_null=True)
    motivo = serializers.CharField()
    aberto_em = serializers.DateTimeField()
    fechado_em = serializers.DateTimeField(allow_null=True)
    nota = serializers.CharField(allow_blank=True)


class ListaDeAlertasSerializer(serializers.Serializer):
    alertas = AlertaSerializer(many=True, help_text="Até 200, os mais novos primeiro.")


_DETALHE = OpenApiResponse(
    AgendamentoDetalheSerializer,
    description="O agendamento, seus próximos disparos e ocorrências recentes.",
)
_LOCAL_DO_AGENDAMENTO = _location(201, descricao="`/relatorios/agendamentos/<id>`.")

listar_agendamentos = extend_schema(
    operation_id="listar_agendamentos",
    tags=["agendamentos"],
    summary="Os agendamentos do tenant",
    parameters=_cabecalhos(),
    responses={200: ListaDeAgendamentosSerializer, **COMUNS},
)
criar_agendamento = extend_schema(
    operation_id="criar_agendamento",
    tags=["agendamentos"],
    summary="Cria um agendamento (ativo)",
    request=NovoAgendamentoSerializer,
    parameters=_cabecalhos(_LOCAL_DO_AGENDAMENTO),
    examples=[
        OpenApiExample(
            "vendas de ontem às 6h",
            {
                "nome": "Vendas de ontem",
                "tipo": "vendas",
                "periodo": "ontem",
                "cron": "0 6 * * *",
                "prazo_minutos": 60,
                "destinatarios": ["gerente@example.com"],
            },
            request_only=True,
        )
    ],
    responses={201: _DETALHE, 400: E400, 413: E413, **COMUNS},
)
ver_agendamento = extend_schema(
    operation_id="ver_agendamento",
    tags=["agendamentos"],
    summary="Um agendamento",
    parameters=_cabecalhos(),
    responses={200: _DETALHE, 404: E404, **COMUNS},
)
excluir_agendamento = extend_schema(
    operation_id="excluir_agendamento",
    tags=["agendamentos"],
    summary="Exclui um agendamento",
    parameters=_cabecalhos(),
    responses={204: None, 404: E404, **COMUNS},
)
pausar_agendamento = extend_schema(
    operation_id="pausar_agendamento",
    tags=["agendamentos"],
    summary="Pausa um agendamento (idempotente)",
    request=None,
    parameters=_cabecalhos(),
    responses={200: _DETALHE, 404: E404, 413: E413, **COMUNS},
)
retomar_agendamento = extend_schema(
    operation_id="retomar_agendamento",
    tags=["agendamentos"],
    summary="Retoma um agendamento a partir de agora (idempotente)",
    request=None,
    parameters=_cabecalhos(),
    responses={200: _DETALHE, 404: E404, 413: E413, **COMUNS},
)
listar_alertas = extend_schema(
    operation_id="listar_alertas",
    tags=["alertas"],
    summary="Os alertas de ausência do tenant",
    parameters=[
        OpenApiParameter(
            "situacao",
            OpenApiTypes.STR,
            OpenApiParameter.QUERY,
            enum=["abertos", "fechados"],
            description="Só os abertos, ou só os fechados; ausente: todos.",
        ),
        *_cabecalhos(),
    ],
    responses={200: ListaDeAlertasSerializer, 400: E400, **COMUNS},
)

# --- Webhooks -----------------------------------------------------------------------


class NovoWebhookSerializer(serializers.Serializer):
    url = serializers.URLField(
        max_length=2000,
        help_text="`https://` para um endereço público (regra contra SSRF).",
    )
    # At least one (notificacoes.validar_eventos refuses an empty list).
    eventos = serializers.ListField(
        child=serializers.ChoiceField(Evento.choices), min_length=1
    )


class WebhookSerializer(serializers.Serializer):
    # A webhook as listed: never its secret.

    id = serializers.IntegerField()
    url = serializers.CharField()
    eventos = serializers.ListField(child=serializers.ChoiceField(Evento.choices))
    ativo = serializers.BooleanField()
    criado_em = serializers.DateTimeField()


class WebhookCriadoSerializer(WebhookSerializer):
    segredo = serializers.CharField(
        help_text="`whsec_...`: mostrado só nesta resposta; assina as entregas."
    )


listar_webhooks = extend_schema(
    operation_id="listar_webhooks",
    tags=["webhooks"],
    summary="Os webhooks do tenant (sem o segredo)",
    parameters=_cabecalhos(),
    responses={200: WebhookSerializer(many=True), **COMUNS},
)
criar_webhook = extend_schema(
    operation_id="criar_webhook",
    tags=["webhooks"],
    summary="Registra um webhook; o segredo aparece só aqui",
    request=NovoWebhookSerializer,
    parameters=_cabecalhos(_location(201, descricao="`/relatorios/webhooks/<id>`.")),
    examples=[
        OpenApiExample(
            "pronto e falhou",
            {
                "url": "https://erp.example.com/ganchos",
                "eventos": ["job.pronto", "job.falhou"],
            },
            request_only=True,
        )
    ],
    responses={201: WebhookCriadoSerializer, 400: E400, 413: E413, **COMUNS},
)
ver_webhook = extend_schema(
    operation_id="ver_webhook",
    tags=["webhooks"],
    summary="Um webhook (sem o segredo)",
    parameters=_cabecalhos(),
    responses={200: WebhookSerializer, 404: E404, **COMUNS},
)
excluir_webhook = extend_schema(
    operation_id="excluir_webhook",
    tags=["webhooks"],
    summary="Remove um webhook",
    parameters=_cabecalhos(),
    responses={204: None, 404: E404, **COMUNS},
)

# --- Hooks (SPECTACULAR_SETTINGS) ----------------------------------------------------

_CAMINHO_DO_SUBMETER = "/relatorios/{tipo}"


def so_a_api(endpoints: list[tuple[Any, ...]], **kwargs: Any) -> list[tuple[Any, ...]]:
    """The API's canonical paths: no trailing-slash twins; one submit per type."""
    resultado = []
    for caminho, regex, metodo, view in endpoints:
        if not caminho.startswith("/relatorios/") or caminho.endswith("/"):
            continue
        if caminho == _CAMINHO_DO_SUBMETER:
            for tipo in sorted(tipos.registro()):
                resultado.append(
                    (
                        f"/relatorios/{tipo}",
                        f"^relatorios/{re.escape(tipo)}$",
                        metodo,
                        view,
                    )
                )
            continue
        resultado.append((caminho, regex, metodo, view))
    return resultado


def _link(operacao: str, parametro: str, descricao: str) -> dict[str, Any]:
    return {
        "operationId": operacao,
        "parameters": {parametro: "$response.body#/id"},
        "description": descricao,
    }


# From an answer that names a resource, to the operations on it (OpenAPI
# links: client generators and schemathesis' stateful tests follow them).
_DO_JOB = {
    "estado": _link("estado_do_job", "job_id", "O estado do job (`Location`)."),
    "csv": _link("resultado_csv", "job_id", "O resultado em CSV, quando pronto."),
}
_DO_AGENDAMENTO = {
    nome: _link(f"{nome}_agendamento", "agendamento_id", f"{nome.capitalize()}.")
    for nome in ("ver", "pausar", "retomar", "excluir")
}
_DO_WEBHOOK = {
    nome: _link(f"{nome}_webhook", "webhook_id", f"{nome.capitalize()}.")
    for nome in ("ver", "excluir")
}
LINKS: dict[tuple[str, str], dict[str, Any]] = {
    ("estado_do_job", "200"): {"csv": _DO_JOB["csv"]},
    ("criar_agendamento", "201"): _DO_AGENDAMENTO,
    ("ver_agendamento", "200"): _DO_AGENDAMENTO,
    ("criar_webhook", "201"): _DO_WEBHOOK,
}


# Request bodies whose unknown fields are a 400 (`campo desconhecido`).
CORPOS_FECHADOS = ("Parametros", "NovoAgendamento", "NovoWebhook")


def acrescentar_links(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: what drf-spectacular cannot declare.

    OpenAPI links, and `additionalProperties: false` on the request bodies
    that refuse unknown fields.
    """
    componentes = result.get("components", {}).get("schemas", {})
    for nome in CORPOS_FECHADOS:
        if nome in componentes:
            componentes[nome]["additionalProperties"] = False
    for operacoes in result.get("paths", {}).values():
        for operacao in operacoes.values():
            if not isinstance(operacao, dict) or "operationId" not in operacao:
                continue
            identificador = operacao["operationId"]
            for codigo, resposta in operacao.get("responses", {}).items():
                links = LINKS.get((identificador, codigo))
                if identificador.startswith("submeter_") and codigo in ("200", "202"):
                    links = _DO_JOB
                if links:
                    resposta["links"] = links
    return result
