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
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from relatorios.models import Tenant, Usuario, Webhook, permissoes
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
