"""Schedules and their absence alerts."""

from __future__ import annotations

from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)
from rest_framework import serializers

from relatorios.agendamentos.agenda import CRON_MAX, EMAIL_MAX, NOME_MAX
from relatorios.api.esquema.comum import (
    COMUNS,
    E400,
    E404,
    E413,
    SEM_CONTROLE,
    cabecalhos,
    codigo_de_loja,
    limite_do_tenant,
    location,
)
from relatorios.models import (
    FormaDeEntrega,
    MotivoDoPulo,
    Periodo,
    PularEntrega,
    Recuperacao,
)
from relatorios.models.agendamentos import EstadoOcorrencia


class NovoAgendamentoSerializer(serializers.Serializer):
    # The limits are agenda.criar's (its constants); maxItems of destinatarios
    # is a setting, written in by the `limites_configurados` hook.
    nome = serializers.CharField(
        required=False,
        max_length=NOME_MAX,
        allow_blank=True,
        validators=[RegexValidator(SEM_CONTROLE)],
        help_text="Sem quebras de linha nem tabulações.",
    )
    tipo = serializers.CharField(help_text="Um tipo de relatório registrado.")
    periodo = serializers.ChoiceField(choices=Periodo.choices)
    cron = serializers.CharField(
        max_length=CRON_MAX,
        help_text="Cinco campos (min hora dia mês semana), no fuso do tenant; "
        "`L` no dia do mês é o último dia (`0 3 L * *`). Dois disparos não podem "
        "ficar a menos de `RELATORIOS_INTERVALO_MINIMO_MIN` minutos (15) um do "
        "outro.",
    )
    prazo_minutos = serializers.IntegerField(
        min_value=1, max_value=62 * 24 * 60, help_text="Prazo do alerta de ausência."
    )
    # The optional fields take null as absent (agendamentos.criar's defaults).
    agrupar = serializers.ChoiceField(
        choices=["dia", "mes"], required=False, allow_null=True
    )
    lojas = serializers.ListField(
        child=codigo_de_loja(), required=False, allow_null=True
    )
    destinatarios = serializers.ListField(
        child=serializers.EmailField(max_length=EMAIL_MAX),
        required=False,
        allow_null=True,
        help_text="Até `RELATORIOS_MAX_DESTINATARIOS` e-mails. Recusados (400 "
        "nomeando `destinatarios`): caracteres de controle ou espaços, parte "
        "local entre aspas, IP no lugar do domínio (`a@[10.0.0.5]`), domínio "
        "sem ponto (`postmaster@localhost`), palavras codificadas "
        "(`=?utf-8?q?...?=`) e, se o suporte definiu os domínios permitidos da "
        "empresa, um domínio fora deles e dos seus subdomínios.",
    )
    entrega = serializers.ChoiceField(
        choices=FormaDeEntrega.choices,
        required=False,
        allow_null=True,
        help_text="Quando uma ocorrência fica pronta, cada destinatário recebe um "
        "e-mail com a planilha anexada (`anexo`, padrão) ou só com o link "
        "assinado para baixá-la (`link`).",
    )
    webhooks = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        allow_null=True,
        help_text="Ids de webhooks do tenant que recebem `agendamento.entregue`.",
    )
    pular = serializers.ChoiceField(
        choices=PularEntrega.choices,
        required=False,
        allow_null=True,
        help_text="Relatórios prontos que não são enviados: `nunca` (padrão), "
        "`vazio` (sem linhas), `igual` (o mesmo resultado do último enviado), "
        "`vazio_ou_igual`. A ocorrência pulada conta como entregue no prazo "
        "(nenhum alerta) e diz por quê em `pulada_por`.",
    )
    recuperacao = serializers.ChoiceField(
        choices=Recuperacao.choices,
        required=False,
        allow_null=True,
        help_text="Padrão (ausente ou null): `ultima`.",
    )


class EntregaDoAgendamentoSerializer(serializers.Serializer):
    """PATCH's body: who gets the schedule's reports and how; a field left
    out stays as it is."""

    destinatarios = serializers.ListField(
        child=serializers.EmailField(max_length=EMAIL_MAX),
        required=False,
        help_text="Até `RELATORIOS_MAX_DESTINATARIOS` e-mails. Quem sai da lista "
        "deixa de receber, e os links que já recebeu deixam de abrir (410).",
    )
    entrega = serializers.ChoiceField(choices=FormaDeEntrega.choices, required=False)
    webhooks = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        help_text="Ids de webhooks ativos do tenant; um webhook que sai da lista "
        "deixa de receber, e os links que recebeu deixam de abrir.",
    )
    pular = serializers.ChoiceField(choices=PularEntrega.choices, required=False)


class OcorrenciaSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    planejado_para = serializers.DateTimeField()
    prazo_em = serializers.DateTimeField()
    estado = serializers.ChoiceField(choices=EstadoOcorrencia.choices)
    motivo = serializers.CharField(allow_blank=True)
    params = serializers.DictField()
    job_id = serializers.IntegerField(allow_null=True)
    entregue_em = serializers.DateTimeField(
        allow_null=True,
        help_text="Quando o relatório pronto foi entregue (ou pulado); null antes.",
    )
    pulada_por = serializers.ChoiceField(
        choices=MotivoDoPulo.choices,
        allow_null=True,
        help_text="Entregue sem enviar nada, e por quê (o `pular` do "
        "agendamento); null: enviado, ou ainda não entregue.",
    )


class AgendamentoSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    nome = serializers.CharField(allow_blank=True)
    tipo = serializers.CharField()
    periodo = serializers.ChoiceField(choices=Periodo.choices)
    cron = serializers.CharField()
    descricao = serializers.CharField(
        read_only=True,
        help_text="O `cron` em palavras (pt-BR), no fuso do tenant, com o próximo "
        "disparo: «no dia 1 de cada mês, às 03:00 (horário de Brasília); próximo: "
        "01/01/2027 03:00» (pausado ou excluído: «sem próximo disparo»). Só "
        "leitura: para exibir, não para interpretar.",
    )
    prazo_minutos = serializers.IntegerField()
    agrupar = serializers.CharField()
    lojas = serializers.ListField(child=serializers.CharField())
    destinatarios = serializers.ListField(child=serializers.CharField())
    entrega = serializers.ChoiceField(choices=FormaDeEntrega.choices)
    webhooks = serializers.ListField(child=serializers.IntegerField())
    pular = serializers.ChoiceField(choices=PularEntrega.choices)
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
_LOCAL_DO_AGENDAMENTO = location(201, descricao="`/relatorios/agendamentos/<id>`.")

listar_agendamentos = extend_schema(
    operation_id="listar_agendamentos",
    tags=["agendamentos"],
    summary="Os agendamentos do tenant",
    parameters=cabecalhos(),
    responses={200: ListaDeAgendamentosSerializer, **COMUNS},
)
criar_agendamento = extend_schema(
    operation_id="criar_agendamento",
    tags=["agendamentos"],
    summary="Cria um agendamento (ativo)",
    request=NovoAgendamentoSerializer,
    parameters=cabecalhos(_LOCAL_DO_AGENDAMENTO),
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
    responses={
        201: _DETALHE,
        400: E400,
        409: limite_do_tenant(
            "RELATORIOS_MAX_AGENDAMENTOS_POR_TENANT",
            "o limite de 100 agendamentos por empresa foi atingido: exclua um "
            "antes de criar outro",
        ),
        413: E413,
        **COMUNS,
    },
)
ver_agendamento = extend_schema(
    operation_id="ver_agendamento",
    tags=["agendamentos"],
    summary="Um agendamento",
    parameters=cabecalhos(),
    responses={200: _DETALHE, 404: E404, **COMUNS},
)
excluir_agendamento = extend_schema(
    operation_id="excluir_agendamento",
    tags=["agendamentos"],
    summary="Exclui um agendamento",
    parameters=cabecalhos(),
    responses={204: None, 404: E404, **COMUNS},
)
alterar_entrega_do_agendamento = extend_schema(
    operation_id="alterar_entrega_do_agendamento",
    tags=["agendamentos"],
    summary="Muda quem recebe os relatórios de um agendamento, e como",
    description=(
        "Só os campos enviados mudam. O que o agendamento gera e quando não "
        "mudam aqui: isso é outro agendamento. Quem sai da lista de "
        "destinatários (ou de webhooks) deixa de receber, e os links de "
        "download que recebeu deixam de abrir (410)."
    ),
    request=EntregaDoAgendamentoSerializer,
    parameters=cabecalhos(),
    responses={200: _DETALHE, 400: E400, 404: E404, 413: E413, **COMUNS},
)
pausar_agendamento = extend_schema(
    operation_id="pausar_agendamento",
    tags=["agendamentos"],
    summary="Pausa um agendamento (idempotente)",
    request=None,
    parameters=cabecalhos(),
    responses={200: _DETALHE, 404: E404, 413: E413, **COMUNS},
)
retomar_agendamento = extend_schema(
    operation_id="retomar_agendamento",
    tags=["agendamentos"],
    summary="Retoma um agendamento a partir de agora (idempotente)",
    request=None,
    parameters=cabecalhos(),
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
        *cabecalhos(),
    ],
    responses={200: ListaDeAlertasSerializer, 400: E400, **COMUNS},
)
