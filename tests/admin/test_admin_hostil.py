"""The admin against hostile query strings: no secret leaks through a lookup,
no part of a secret on a page, and no 5xx from any changelist or change form.

Every registered ModelAdmin is taken from the site itself, so one added later
is swept too.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin import helpers as admin_helpers
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group
from django.db import models
from django.test import Client
from django.urls import reverse

from relatorios.apps import CAMPOS_SECRETOS
from relatorios.models import Entrega, Tenant, Usuario, Webhook, permissoes
from tests import helpers

pytestmark = pytest.mark.django_db

SEGREDO = "whsec_MicIA8p0QkVaDl3Zx9yTg2bH7sRf1nLw"


@pytest.fixture
def webhook() -> Webhook:
    tenant = helpers.criar_tenant()
    return Webhook.objects.create(
        tenant=tenant,
        url="https://exemplo.com.br/ganchos",
        segredo=SEGREDO,
        eventos=["job.pronto"],
    )


@pytest.fixture
def suporte() -> Client:
    grupo: Group = permissoes.criar_grupo_suporte()
    usuario = helpers.criar_usuario(None, is_staff=True)[0]
    usuario.groups.add(grupo)
    cliente = Client()
    cliente.force_login(usuario)
    return cliente


@pytest.fixture
def raiz() -> Client:
    cliente = Client()
    cliente.force_login(Usuario.objects.create_superuser("raiz", "", "senha-123"))
    return cliente


def lista_de_webhooks(cliente: Client, consulta: str) -> Any:
    return cliente.get(f"/admin/relatorios/webhook/?{consulta}")


@pytest.mark.parametrize(
    "lookup",
    ["segredo__startswith", "segredo__istartswith", "segredo__regex", "segredo"],
)
def test_segredo_nao_e_um_filtro_da_lista(
    webhook: Webhook, suporte: Client, lookup: str
) -> None:
    """The 1,044-request recovery: a right guess listed the row, a wrong one not."""
    certo = lista_de_webhooks(
        suporte, f"id__exact={webhook.pk}&{lookup}={SEGREDO[:14]}"
    )
    errado = lista_de_webhooks(suporte, f"id__exact={webhook.pk}&{lookup}=whsec_ZZZZ")

    assert certo.status_code == errado.status_code == 400
    assert SEGREDO[6:14].encode() not in certo.content


def test_segredo_nao_passa_por_outro_modelo(webhook: Webhook, raiz: Client) -> None:
    resposta = raiz.get(
        f"/admin/relatorios/tenant/?webhooks__segredo__startswith={SEGREDO[:12]}"
    )
    assert resposta.status_code == 400


def test_pagina_do_webhook_nao_mostra_parte_do_segredo(
    webhook: Webhook, suporte: Client
) -> None:
    pagina = suporte.get(f"/admin/relatorios/webhook/{webhook.pk}/change/")

    assert pagina.status_code == 200
    assert "mostrado só na criação" in pagina.content.decode()
    # Nothing past the public `whsec_` prefix, not even four characters.
    assert SEGREDO[6:10].encode() not in pagina.content


# --- The sweep ------------------------------------------------------------------

CONSULTAS_HOSTIS = [
    "status__exact=%00",
    "tipo=%00",
    "estado__exact=%00",
    "q=%00",
    "q=a%00b",
    "o=%00",
    "o=99",
    "o=-1.abc",
    "p=%00",
    "p=99999999999999999999999",
    "id__exact=99999999999999999999999",
    "id__exact=-1",
    "id__exact=abc",
    "criado_em__gte=ontem",
    "criado_em__gte=%00",
    "tenant__id__exact=%00",
    "nao_existe__exact=1",
    "segredo__startswith=whsec_",
    "all=&e=1",
    "_changelist_filters=status__exact%3D%2500",
    "%00=1",
    "q=" + "x" * 20000,
]

IDS_HOSTIS = ["%00", "abc", "99999999999999999999999", "-1", "0", "1%00"]


def modelos_registrados() -> list[Any]:
    return [m for m in apps.get_models() if admin.site.is_registered(m)]


def test_o_sweep_cobre_os_modelos_do_suporte() -> None:
    nomes = {m._meta.model_name for m in modelos_registrados()}
    assert {"relatoriojob", "agendamento", "ocorrencia", "entrega", "webhook"} <= nomes


@pytest.mark.parametrize("como", ["raiz", "suporte"])
def test_nenhuma_url_do_admin_responde_5xx(
    webhook: Webhook, como: str, request: pytest.FixtureRequest
) -> None:
    cliente: Client = request.getfixturevalue(como)
    falhas = []
    for modelo in modelos_registrados():
        rotulo = f"admin:{modelo._meta.app_label}_{modelo._meta.model_name}"
        lista = reverse(f"{rotulo}_changelist")
        for consulta in CONSULTAS_HOSTIS:
            resposta = cliente.get(f"{lista}?{consulta}")
            if (
                resposta.status_code >= 500
                or SEGREDO[6:14].encode() in resposta.content
            ):
                falhas.append((lista, consulta, resposta.status_code))
        for pk in IDS_HOSTIS:
            url = f"{lista}{pk}/change/"
            resposta = cliente.get(url)
            if resposta.status_code >= 500:
                falhas.append((url, "", resposta.status_code))
    assert falhas == []
    assert Tenant.objects.count() == 1  # nothing changed


# --- Lookups the database or Django rejects: a 400 naming them, never a 500 -----
#
# Django validates a lookup's value when it builds the filter (a bad one sends
# the list to `?e=1`); some are only refused when the SQL is compiled
# (`id__range=1`, `__year=99999`) or run (`__regex=[`), while the template
# renders the page. Every lookup kind, on every registered model, on a field
# of the kind it applies to.

LOOKUPS = {
    "range": ["{pk}__range=1", "{pk}__range=1,2,3", "{data}__range=a,b"],
    "year": ["{data}__year=99999", "{data}__year__gt=99999", "{data}__year=-1"],
    "regex": ["{texto}__regex=[", "{texto}__iregex=(", "{texto}__regex=a{{9,1}}"],
    "in": ["{pk}__in=a,b", "{pk}__in=99999999999999999999999", "{data}__in=x,y"],
    "isnull": ["{pk}__isnull=talvez", "{data}__isnull=%FF"],
    "date": [
        "{data}__date=x",
        "{data}__date=99999-01-01",
        "{data}__date__year=99999",
        "{data}__date__gt=2026-02-30",
    ],
    "tipos": [
        "{pk}=abc",
        "{pk}__gt=1e400",
        "{pk}__lt=-99999999999999999999999",
        "{data}__gte=ontem",
        "{data}=2026-02-30",
        "{data}__hour=25",
        "{data}__week_day=abc",
        "{texto}__startswith=%FF",
        "_facets=1&{texto}__regex=[",
        "q=x&{pk}__range=1",
    ],
}
DO_ISSUE = ["{pk}__range=1", "{data}__year=99999", "{texto}__regex=["]


def campos_do_modelo(modelo: type[models.Model]) -> dict[str, str]:
    """Its pk, a date field and a text field (the pk where it has none)."""
    pk = modelo._meta.pk.name  # type: ignore[union-attr]
    concretos = [
        f for f in modelo._meta.concrete_fields if f.name not in CAMPOS_SECRETOS
    ]
    datas = [f.name for f in concretos if isinstance(f, models.DateField)]
    textos = [
        f.name for f in concretos if isinstance(f, (models.CharField, models.TextField))
    ]
    return {"pk": pk, "data": (datas or [pk])[0], "texto": (textos or [pk])[0]}


def consultas_do_modelo(rotulos: list[str], modelos: list[str]) -> list[Any]:
    """Each query template on each model, filled with that model's fields."""
    consultas = [
        (rotulo, modelo.format(**campos_do_modelo(apps.get_model(rotulo))))
        for rotulo in rotulos
        for modelo in modelos
    ]
    return [pytest.param(r, c, id=f"{r}-{c}") for r, c in consultas]


ROTULOS = [m._meta.label for m in modelos_registrados()]


def lista(rotulo: str) -> str:
    modelo = apps.get_model(rotulo)
    return reverse(
        f"admin:{modelo._meta.app_label}_{modelo._meta.model_name}_changelist"
    )


def parametros(consulta: str) -> set[str]:
    return {par.split("=", 1)[0] for par in consulta.split("&")} - {"_facets", "q"}


@pytest.mark.parametrize(
    ("rotulo", "consulta"),
    consultas_do_modelo(ROTULOS, [c for cs in LOOKUPS.values() for c in cs]),
)
def test_lookup_recusado_e_400_nomeando_o_parametro_nunca_500(
    webhook: Webhook, raiz: Client, rotulo: str, consulta: str
) -> None:
    resposta = raiz.get(f"{lista(rotulo)}?{consulta}")
    texto = resposta.content.decode()
    # 200: the lookup was valid (an empty list is an answer); 400: refused.
    # Never Django's redirect to `?e=1` and its "database error" page.
    assert resposta.status_code in (200, 400), (resposta.status_code, texto[:300])
    assert resposta.status_code == 200 or any(
        nome in texto for nome in parametros(consulta)
    ), texto[:300]


@pytest.mark.parametrize(("rotulo", "consulta"), consultas_do_modelo(ROTULOS, DO_ISSUE))
def test_lookups_do_issue_sao_400_em_toda_lista(
    webhook: Webhook, suporte: Client, raiz: Client, rotulo: str, consulta: str
) -> None:
    respostas = {raiz.get(f"{lista(rotulo)}?{consulta}").status_code}
    # Support sees its own models; a list it may not see is a 403 before any lookup.
    respostas.add(suporte.get(f"{lista(rotulo)}?{consulta}").status_code)
    assert respostas <= {400, 403}
    assert 400 in respostas


# Not ids of the model's type. (A well-typed id that matches no row runs the
# action on nothing: axes' "cleanup expired attempts" then fails on its own,
# whatever is selected; left to axes.)
SELECOES_RUINS = ["abc", "1.5", "", "%00", "1%202"]


@pytest.mark.parametrize("rotulo", ROTULOS)
def test_acao_com_selecao_de_tipo_errado_nao_da_500_nem_muda_nada(
    webhook: Webhook, raiz: Client, rotulo: str
) -> None:
    modelo = apps.get_model(rotulo)
    pedido = raiz.get(lista(rotulo)).wsgi_request
    acoes = admin.site.get_model_admin(modelo).get_actions(pedido)
    antes = [m.objects.count() for m in modelos_registrados()]
    falhas = [
        (acao, selecao, resposta.status_code)
        for acao in acoes
        for selecao in SELECOES_RUINS
        if (
            resposta := raiz.post(
                lista(rotulo),
                f"action={acao}&{admin_helpers.ACTION_CHECKBOX_NAME}={selecao}",
                content_type="application/x-www-form-urlencoded",
            )
        ).status_code
        not in (200, 302, 400)
    ]
    assert falhas == []
    assert [m.objects.count() for m in modelos_registrados()] == antes


@pytest.mark.parametrize(
    "consulta",
    ["nome__regex=<b>x</b>[", "segredo__<b>x</b>=1", "id__in=<b>x</b>"],
    ids=["recusado-pelo-banco", "campo-secreto", "recusado-pelo-django"],
)
def test_recusa_e_texto_puro_sem_o_html_da_consulta(
    raiz: Client, consulta: str
) -> None:
    resposta = raiz.get(f"/admin/relatorios/tenant/?{consulta}")
    assert resposta.status_code == 400
    assert resposta["Content-Type"] == "text/plain; charset=utf-8"


# --- A chat channel's URL is its secret ------------------------------------------

URLS_DE_CHAT = {
    "slack": (
        "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/Xq7pLm2VzR9tKw4Y",
        "Xq7pLm2VzR9t",
    ),
    "teams": (
        "https://rede.webhook.office.com/webhookb2/abc/IncomingWebhook/def"
        "?api-version=1&sig=Hf83kLqP0zXw7Vb2Nc5Tr1Ys",
        "Hf83kLqP0zXw7Vb2",
    ),
    "google_chat": (
        "https://chat.googleapis.com/v1/spaces/AAAAbbbb/messages"
        "?key=AIzaSyDdI0hCZtE6vySjMm&token=Qe5Rt7Yu9Io1Pa3Sd",
        "AIzaSyDdI0hCZtE6",
    ),
}


@pytest.fixture(params=sorted(URLS_DE_CHAT))
def chat(request: pytest.FixtureRequest) -> tuple[Webhook, str]:
    url, segredo = URLS_DE_CHAT[request.param]
    gancho = Webhook.objects.create(
        tenant=helpers.criar_tenant(),
        canal=request.param,
        url=url,
        segredo="",
        eventos=["job.pronto"],
    )
    return gancho, segredo


def test_o_nome_do_webhook_de_chat_mostra_so_o_host_e_o_fim(
    chat: tuple[Webhook, str],
) -> None:
    gancho, segredo = chat

    assert segredo not in str(gancho)
    assert gancho.url not in str(gancho)
    assert str(gancho).endswith(gancho.url[-4:])


@pytest.mark.parametrize(
    "lookup", ["url__startswith", "url__istartswith", "url__contains", "url"]
)
def test_url_nao_e_um_filtro_da_lista_de_webhooks(
    chat: tuple[Webhook, str], suporte: Client, raiz: Client, lookup: str
) -> None:
    gancho, _ = chat
    for cliente in (suporte, raiz):
        certo = lista_de_webhooks(
            cliente, f"id__exact={gancho.pk}&{lookup}={gancho.url[:40]}"
        )
        errado = lista_de_webhooks(cliente, f"id__exact={gancho.pk}&{lookup}=https://x")

        assert certo.status_code == errado.status_code == 400


def test_url_nao_passa_pelas_entregas_nem_pelo_tenant(
    chat: tuple[Webhook, str], raiz: Client
) -> None:
    gancho, _ = chat
    prefixo = gancho.url[:40]

    entregas = raiz.get(
        f"/admin/relatorios/entrega/?webhook__url__startswith={prefixo}"
    )
    tenants = raiz.get(f"/admin/relatorios/tenant/?webhooks__url__startswith={prefixo}")

    assert entregas.status_code == tenants.status_code == 400


def test_paginas_do_admin_nao_mostram_a_url_do_chat(
    chat: tuple[Webhook, str], suporte: Client, raiz: Client
) -> None:
    gancho, segredo = chat
    entrega = Entrega.objects.create(
        mensagem_id="hostil-1",
        tenant=gancho.tenant,
        canal=gancho.canal,
        evento="job.pronto",
        webhook=gancho,
        payload={},
    )
    paginas = [
        "/admin/relatorios/webhook/",
        f"/admin/relatorios/webhook/{gancho.pk}/change/",
        f"/admin/relatorios/webhook/{gancho.pk}/history/",
        f"/admin/relatorios/webhook/{gancho.pk}/delete/",
        "/admin/relatorios/entrega/",
        f"/admin/relatorios/entrega/{entrega.pk}/change/",
    ]
    for cliente in (suporte, raiz):
        for pagina in paginas:
            resposta = cliente.get(pagina)
            assert resposta.status_code in (200, 403), pagina
            assert segredo.encode() not in resposta.content, pagina


def test_registro_do_admin_nao_guarda_a_url_do_chat(
    chat: tuple[Webhook, str], raiz: Client
) -> None:
    gancho, segredo = chat

    resposta = raiz.post(
        f"/admin/relatorios/webhook/{gancho.pk}/change/",
        {"eventos": ["job.pronto", "job.falhou"], "ativo": "on"},
    )

    assert resposta.status_code == 302
    [registro] = LogEntry.objects.filter(object_id=str(gancho.pk))
    assert segredo not in registro.object_repr
    assert gancho.url not in registro.object_repr
