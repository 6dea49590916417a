"""notificacoes/enderecos.py: the one rule for every address a tenant gives us."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from relatorios.models import Agendamento, Inscricao, RelatorioJob, Tenant
from relatorios.notificacoes import enderecos
from relatorios.tipos.normalizacao import ErroDeParametro
from tests import helpers

RECUSADOS = [
    # Control characters inside a quoted local part: the alert email's
    # header block broke on the form feed.
    pytest.param('"x\fBcc: a@evil.example"@a.example', "controle", id="aspas-com-ff"),
    pytest.param('"a b"@rede.com.br', "aspas", id="aspas-com-espaco"),
    pytest.param("a b@rede.com.br", "inválido", id="espaco"),
    pytest.param('"ab"@rede.com.br', "aspas", id="aspas"),
    pytest.param("a\\@b@rede.com.br", "aspas", id="barra-invertida"),
    pytest.param("a@[10.0.0.5]", "IP", id="ip-literal"),
    pytest.param("a@[IPv6:::1]", "IP", id="ipv6-literal"),
    pytest.param("postmaster@localhost", "ponto", id="localhost"),
    pytest.param("root@intranet", "ponto", id="sem-ponto"),
    pytest.param("a@.com", "ponto", id="so-ponto-na-ponta"),
    pytest.param(
        "=?utf-8?q?ceo=40rede.com.br?=@evil.example", "codificada", id="rfc2047"
    ),
    pytest.param("a=?x?=@rede.com.br", "codificada", id="rfc2047-curta"),
    pytest.param("a@rede.com.br\r\nBcc: x@evil.example", "controle", id="crlf"),
    pytest.param("a\x00@rede.com.br", "controle", id="nul"),
    pytest.param("a\u202e@rede.com.br", "controle", id="bidi"),
    pytest.param("a\u200b@rede.com.br", "controle", id="largura-zero"),
    pytest.param("a\u00a0@rede.com.br", "inválido", id="espaco-duro"),
    pytest.param("a\u2028@rede.com.br", "controle", id="separador-de-linha"),
    pytest.param("a@rede.com.br.", "inválido", id="ponto-final"),
    pytest.param("ação@rede.com.br", "inválido", id="local-nao-ascii"),
    pytest.param("a@-rede.com.br", "inválido", id="rotulo-com-hifen"),
    pytest.param("sem-arroba.com.br", "inválido", id="sem-arroba"),
    pytest.param("x@", "inválido", id="sem-dominio"),
    pytest.param("@rede.com.br", "inválido", id="sem-local"),
    pytest.param("a" * 246 + "@rede.com", "254", id="longo"),
]

ACEITOS = [
    ("contab@rede.com.br", "contab@rede.com.br"),
    ("  Dono@Rede.COM ", "dono@rede.com"),
    ("a.b+fechamento@sp.rede.com.br", "a.b+fechamento@sp.rede.com.br"),
    ("o'brien@rede.com.br", "o'brien@rede.com.br"),
    ("contab@exämple.com", "contab@exämple.com"),
]


@pytest.mark.parametrize(("endereco", "trecho"), RECUSADOS)
def test_endereco_recusado_diz_por_que(endereco: str, trecho: str) -> None:
    motivo = enderecos.motivo_da_recusa(endereco)
    assert motivo is not None
    assert trecho in motivo


@pytest.mark.parametrize(("endereco", "trecho"), RECUSADOS)
def test_validar_e_erro_de_parametro_que_nomeia_o_campo(
    endereco: str, trecho: str
) -> None:
    with pytest.raises(ErroDeParametro) as erro:
        enderecos.validar(endereco, campo="destinatarios")
    assert erro.value.campo == "destinatarios"
    assert trecho in erro.value.mensagem
    # A control character is never echoed back into the message.
    assert erro.value.mensagem.isprintable()


@pytest.mark.parametrize(("endereco", "normalizado"), ACEITOS)
def test_endereco_aceito_volta_sem_espacos_em_minusculas(
    endereco: str, normalizado: str
) -> None:
    assert enderecos.motivo_da_recusa(endereco.strip()) is None
    assert enderecos.validar(endereco, campo="x") == normalizado


def test_o_que_nao_e_texto_e_recusado() -> None:
    with pytest.raises(ErroDeParametro) as erro:
        enderecos.validar({"a": 1}, campo="destinatarios")
    assert erro.value.campo == "destinatarios"


@pytest.mark.parametrize(
    ("endereco", "aceito"),
    [
        ("contab@rede.com.br", True),
        ("contab@sp.rede.com.br", True),
        ("contab@REDE.com.br", True),
        ("contab@outra.com.br", False),
        # A suffix that is not a subdomain is another domain.
        ("contab@falsarede.com.br", False),
        ("contab@rede.com.br.evil.example", False),
        ("contab@exämple.com", True),
        ("contab@filial.exämple.com", True),
    ],
)
def test_dominios_permitidos_e_seus_subdominios(endereco: str, aceito: bool) -> None:
    dominios = ["rede.com.br", enderecos.normalizar_dominio("Exämple.COM")]
    motivo = enderecos.motivo_da_recusa(endereco, dominios=dominios)
    assert (motivo is None) == aceito
    assert motivo is None or "rede.com.br" in motivo


@pytest.mark.parametrize(
    ("texto", "dominio"),
    [
        (" Rede.COM.br. ", "rede.com.br"),
        ("exämple.com", "xn--exmple-cua.com"),
        ("sp.rede.com.br", "sp.rede.com.br"),
    ],
)
def test_normalizar_dominio(texto: str, dominio: str) -> None:
    assert enderecos.normalizar_dominio(texto) == dominio


@pytest.mark.parametrize(
    "texto", ["localhost", "[10.0.0.5]", "rede com.br", "a@rede.com.br", "", "-a.com"]
)
def test_dominio_invalido_e_valueerror(texto: str) -> None:
    with pytest.raises(ValueError, match="domínio inválido"):
        enderecos.normalizar_dominio(texto)


@pytest.mark.django_db
def test_recusa_no_envio_usa_os_dominios_do_tenant(tenant: Tenant) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(dominios_email=["rede.com.br"])
    outro = helpers.criar_tenant()

    assert (
        enderecos.recusa_no_envio(tenant_id=tenant.pk, endereco="a@rede.com.br") is None
    )
    assert "rede.com.br" in (
        enderecos.recusa_no_envio(tenant_id=tenant.pk, endereco="a@outra.com.br") or ""
    )
    assert (
        enderecos.recusa_no_envio(tenant_id=outro.pk, endereco="a@outra.com.br") is None
    )
    assert "IP" in (
        enderecos.recusa_no_envio(tenant_id=outro.pk, endereco="a@[10.0.0.5]") or ""
    )


# --- Addresses stored before the rule (migration 0023) -------------------------------


@pytest.mark.django_db
def test_migracao_remove_os_enderecos_recusados_e_guarda_os_outros(
    tenant: Tenant,
) -> None:
    agendamento = helpers.criar_agendamento(
        tenant, destinatarios=["contab@rede.com.br"]
    )
    intacto = helpers.criar_agendamento(
        tenant, cron="0 4 1 * *", destinatarios=["dono@rede.com.br"]
    )
    # As the old rule (Django's validate_email) let them be stored.
    Agendamento.objects.filter(pk=agendamento.pk).update(
        destinatarios=[
            "contab@rede.com.br",
            '"x\fy"@a.example',
            "a@[10.0.0.5]",
            "postmaster@localhost",
        ]
    )
    job = RelatorioJob.objects.create(
        tenant=tenant, tipo="vendas", chave="c" * 64, params={}
    )
    Inscricao.objects.create(job=job, email="postmaster@localhost")
    boa = Inscricao.objects.create(job=job, email="ana@rede.com.br")

    migracao = importlib.import_module("relatorios.migrations.0023_enderecos_recusados")
    migracao.remover_enderecos_recusados(apps, None)

    agendamento.refresh_from_db()
    intacto.refresh_from_db()
    assert agendamento.destinatarios == ["contab@rede.com.br"]
    assert intacto.destinatarios == ["dono@rede.com.br"]
    assert list(Inscricao.objects.values_list("pk", flat=True)) == [boa.pk]
