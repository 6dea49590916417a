"""The support admin: job list, filters, change view, actions, permissions."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import OrmQ

from relatorios.jobs import ciclo, pedidos, suporte
from relatorios.models import (
    EstadoDoJob,
    IndicadorDeAntecipacao,
    RelatorioJob,
    Tenant,
    Usuario,
    permissoes,
)
from tests import helpers

pytestmark = pytest.mark.django_db

LISTA = "/admin/relatorios/relatoriojob/"
_datas = itertools.count(1)


def novo_job(tenant: Tenant, tipo: str = "vendas", **campos: Any) -> int:
    # A distinct period per job: each is its own row (no dedup between them).
    dia = next(_datas)
    inicio = (timezone.datetime(2020, 1, 1) + timedelta(days=dia)).date().isoformat()
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo=tipo,
        params_brutos={"inicio": inicio, "fim": inicio},
        usuario_id=None,
    ).job.id
    if campos:
        RelatorioJob.objects.filter(pk=job_id).update(**campos)
    return job_id


def ids_na_lista(cliente: Client, consulta: str = "") -> set[int]:
    resposta = cliente.get(f"{LISTA}{consulta}")
    assert resposta.status_code == 200
    return {job.pk for job in resposta.context["cl"].result_list}


def agir(cliente: Client, acao: str, ids: list[int], **extra: Any) -> Any:
    return cliente.post(
        LISTA, {"action": acao, "_selected_action": ids, "index": 0, **extra}
    )


@pytest.fixture
def grupo_suporte(db: None) -> Group:
    # Migration 0004 creates it; a flush by a transactional test deletes it.
    return permissoes.criar_grupo_suporte()


@pytest.fixture
def usuario_suporte(grupo_suporte: Group) -> Usuario:
    usuario = helpers.criar_usuario(None, is_staff=True)[0]
    usuario.groups.add(grupo_suporte)
    return usuario


@pytest.fixture
def cliente(usuario_suporte: Usuario) -> Client:
    cliente = Client()
    cliente.force_login(usuario_suporte)
    return cliente


@pytest.fixture
def super_cliente(db: None) -> Client:
    cliente = Client()
    cliente.force_login(
        Usuario.objects.create_superuser("raiz", "", "senha-de-teste-123")
    )
    return cliente


# --- The Suporte group --------------------------------------------------------


def test_migracao_criou_o_grupo_suporte_com_exatamente_suas_permissoes() -> None:
    grupo = Group.objects.get(name="Suporte")
    assert set(
        grupo.permissions.values_list("content_type__app_label", "codename")
    ) == {
        ("relatorios", "view_relatoriojob"),
        ("relatorios", "operar_relatoriojob"),
        ("relatorios", "view_tenant"),
        # 0009_suporte_agendamentos (tests/admin/test_admin_agendamentos.py).
        ("relatorios", "view_agendamento"),
        ("relatorios", "add_agendamento"),
        ("relatorios", "change_agendamento"),
        ("relatorios", "view_ocorrencia"),
        ("relatorios", "view_alerta"),
        ("relatorios", "fechar_alerta"),
        # 0010_suporte_ve_clusters.
        ("relatorios", "view_cluster"),
        # 0012_suporte_entregas.
        ("relatorios", "view_webhook"),
        ("relatorios", "view_entrega"),
        ("relatorios", "reenviar_entrega"),
        # 0022_dominios_de_email.
        ("relatorios", "definir_dominios_email"),
        # 0025_painel_de_operacao (tests/admin/test_painel.py).
        ("relatorios", "ver_painel"),
    }


def test_criar_grupo_e_idempotente_e_repoe_as_permissoes(db: None) -> None:
    grupo = permissoes.criar_grupo_suporte()
    grupo.permissions.clear()
    permissoes.criar_grupo_suporte()
    assert grupo.permissions.count() == len(permissoes.PERMISSOES_DO_SUPORTE)
    assert Group.objects.filter(name="Suporte").count() == 1


def test_suporte_define_os_dominios_de_email_normalizados(
    cliente: Client, tenant: Tenant
) -> None:
    pagina = f"/admin/relatorios/tenant/{tenant.pk}/change/"
    resposta = cliente.post(
        pagina, {"dominios_email": " Rede-A.COM.br., exämple.com; rede-a.com.br"}
    )
    assert resposta.status_code == 302
    tenant.refresh_from_db()
    assert tenant.dominios_email == ["rede-a.com.br", "xn--exmple-cua.com"]
    assert 'value="rede-a.com.br, xn--exmple-cua.com"' in (
        cliente.get(pagina).content.decode()
    )
    assert "rede-a.com.br, xn--exmple-cua.com" in (
        cliente.get("/admin/relatorios/tenant/").content.decode()
    )


def test_definir_os_dominios_remove_os_destinatarios_de_fora(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    dentro_e_fora = helpers.criar_agendamento(
        tenant, destinatarios=["contab@rede-a.com", "socio@gmail.com"]
    )
    so_dentro = helpers.criar_agendamento(
        tenant, cron="0 4 1 * *", destinatarios=["dono@sp.rede-a.com"]
    )
    alheio = helpers.criar_agendamento(outro_tenant, destinatarios=["x@gmail.com"])

    resposta = cliente.post(
        f"/admin/relatorios/tenant/{tenant.pk}/change/",
        {"dominios_email": "rede-a.com"},
    )

    assert resposta.status_code == 302
    assert any(
        f"agendamento {dentro_e_fora.pk}: socio@gmail.com" in m
        for m in helpers.mensagens(resposta)
    )
    for agendamento in (dentro_e_fora, so_dentro, alheio):
        agendamento.refresh_from_db()
    assert dentro_e_fora.destinatarios == ["contab@rede-a.com"]
    assert so_dentro.destinatarios == ["dono@sp.rede-a.com"]
    assert alheio.destinatarios == ["x@gmail.com"]


@pytest.mark.parametrize("texto", ["localhost", "[10.0.0.5]", "a@rede.com", "x y.com"])
def test_dominio_de_email_invalido_e_erro_no_campo(
    cliente: Client, tenant: Tenant, texto: str
) -> None:
    resposta = cliente.post(
        f"/admin/relatorios/tenant/{tenant.pk}/change/",
        {"dominios_email": f"rede-a.com, {texto}"},
    )
    assert resposta.status_code == 200
    assert resposta.context["adminform"].form.errors["dominios_email"]
    tenant.refresh_from_db()
    assert tenant.dominios_email == []


@pytest.mark.parametrize(
    ("email", "dominios"),
    [
        ("ana@[10.0.0.5]", []),
        ("postmaster@localhost", []),
        ('"a b"@rede-a.com', []),
        ("ana@gmail.com", ["rede-a.com"]),
    ],
)
def test_email_de_usuario_segue_a_regra_dos_destinatarios(
    super_cliente: Client, tenant: Tenant, email: str, dominios: list[str]
) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(dominios_email=dominios)
    ana = helpers.criar_usuario(tenant, email="ana@rede-a.com")[0]
    resposta = super_cliente.post(
        f"/admin/relatorios/usuario/{ana.pk}/change/",
        {
            "username": ana.username,
            "password": ana.password,
            "email": email,
            "tenant": tenant.pk,
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert resposta.status_code == 200
    assert set(resposta.context["adminform"].form.errors) == {"email"}
    ana.refresh_from_db()
    assert ana.email == "ana@rede-a.com"


def test_suporte_ve_jobs_e_tenants_e_nada_mais(
    cliente: Client, tenant: Tenant, usuario_suporte: Usuario
) -> None:
    job_id = novo_job(tenant)
    assert cliente.get("/admin/").status_code == 200
    assert cliente.get(LISTA).status_code == 200
    assert cliente.get(f"{LISTA}{job_id}/change/").status_code == 200
    assert cliente.get("/admin/relatorios/tenant/").status_code == 200
    for proibido in (
        f"{LISTA}add/",
        f"{LISTA}{job_id}/delete/",
        "/admin/relatorios/tenant/add/",
        f"/admin/relatorios/tenant/{tenant.pk}/delete/",
        "/admin/relatorios/usuario/",
        "/admin/authtoken/tokenproxy/",
        "/admin/auth/group/",
        "/admin/django_q/ormq/",
        "/admin/django_q/failure/",
    ):
        assert cliente.get(proibido).status_code == 403, proibido
    # Of a tenant, support sets the allowed email domains and nothing else.
    resposta = cliente.post(
        f"/admin/relatorios/tenant/{tenant.pk}/change/",
        {"nome": "Outro nome", "fuso_horario": "UTC", "dominios_email": "rede-a.com"},
    )
    assert resposta.status_code == 302
    tenant.refresh_from_db()
    assert (tenant.nome, tenant.fuso_horario) == ("Rede A", "America/Sao_Paulo")
    assert tenant.dominios_email == ["rede-a.com"]
    # The actions it may run, and no delete.
    acoes = {
        nome
        for nome, _ in cliente.get(LISTA)
        .context["action_form"]
        .fields["action"]
        .choices
    }
    assert acoes == {"", "reexecutar", "marcar_como_falhou", "expirar_resultado"}


def test_ninguem_edita_um_job_nem_o_superusuario(
    super_cliente: Client, tenant: Tenant
) -> None:
    job_id = novo_job(tenant)
    html = super_cliente.get(f"{LISTA}{job_id}/change/").content.decode()
    assert 'name="params"' not in html
    assert 'name="_save"' not in html
    assert (
        super_cliente.post(f"{LISTA}{job_id}/change/", {"tipo": "x"}).status_code == 403
    )
    assert super_cliente.get(f"{LISTA}{job_id}/delete/").status_code == 403
    assert helpers.job(job_id).tipo == "vendas"


def test_equipe_sem_permissao_de_operar_nao_age(
    tenant: Tenant, grupo_suporte: Group
) -> None:
    usuario = helpers.criar_usuario(None, is_staff=True)[0]
    usuario.user_permissions.add(
        *grupo_suporte.permissions.exclude(codename="operar_relatoriojob")
    )
    cliente = Client()
    cliente.force_login(usuario)
    job_id = novo_job(tenant, status=EstadoDoJob.FALHOU)
    assert cliente.get(LISTA).context["action_form"] is None
    agir(cliente, "reexecutar", [job_id])
    assert helpers.job(job_id).status == EstadoDoJob.FALHOU
    resposta = cliente.post(f"{LISTA}{job_id}/acoes/reexecutar/")
    assert resposta.status_code == 403


def test_gerente_de_tenant_nunca_entra_no_admin(tenant: Tenant) -> None:
    gerente = helpers.criar_usuario(tenant, username="gerente.a")[0]
    cliente = Client()
    resposta = cliente.post(
        "/admin/login/?next=/admin/",
        {"username": "gerente.a", "password": "senha-de-teste-123"},
    )
    assert resposta.status_code == 200  # the login form again, with an error
    assert cliente.get("/admin/").status_code == 302
    # Even with "equipe" ticked by mistake: the admin shows every tenant's data.
    Usuario.objects.filter(pk=gerente.pk).update(is_staff=True, is_superuser=True)
    cliente.force_login(gerente)
    assert cliente.get("/admin/").status_code == 302
    assert cliente.get(LISTA).status_code == 302


def test_formulario_de_usuario_recusa_tenant_na_equipe(
    super_cliente: Client, tenant: Tenant
) -> None:
    gerente = helpers.criar_usuario(tenant)[0]
    pagina = f"/admin/relatorios/usuario/{gerente.pk}/change/"
    dados = {
        "username": gerente.username,
        "tenant": tenant.pk,
        "is_active": "on",
        "is_staff": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    resposta = super_cliente.post(pagina, dados)
    assert resposta.status_code == 200
    assert "não pode ser da equipe" in resposta.content.decode()
    gerente.refresh_from_db()
    assert not gerente.is_staff


@pytest.mark.parametrize(
    "caminho",
    [
        "/admin/relatorios/tenant/",
        "/admin/relatorios/tenant/add/",
        "/admin/relatorios/usuario/",
        "/admin/relatorios/usuario/add/",
        "/admin/authtoken/tokenproxy/",
        "/admin/auth/group/",
        "/admin/django_q/success/",
        "/admin/django_q/failure/",
        "/admin/django_q/schedule/",
        "/admin/django_q/ormq/",
    ],
)
def test_tenants_usuarios_tokens_e_django_q_no_admin(
    super_cliente: Client, tenant: Tenant, caminho: str
) -> None:
    helpers.criar_usuario(tenant)
    novo_job(tenant)
    assert super_cliente.get(caminho).status_code == 200


# --- The job list ---------------------------------------------------------------


def test_lista_de_50_jobs_faz_um_numero_fixo_de_consultas(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    agora = timezone.now()
    for i in range(50):
        novo_job(
            tenant if i % 2 else outro_tenant,
            status=[
                EstadoDoJob.PENDENTE,
                EstadoDoJob.EXECUTANDO,
                EstadoDoJob.PRONTO,
                EstadoDoJob.FALHOU,
            ][i % 4],
            tentativas=i % 3,
            iniciado_em=agora - timedelta(minutes=5),
            heartbeat_em=agora - timedelta(seconds=i),
            concluido_em=agora if i % 4 >= 2 else None,
            erro="ZeroDivisionError: division by zero" if i % 4 == 3 else None,
            erro_detalhe="Traceback " * 1000,
            resultado={"linhas": [{"x": n} for n in range(500)]},
            checkpoint={"partes": list(range(100))},
        )
    cliente.get(LISTA)  # warm the per-process caches (content types, permissions)
    with CaptureQueriesContext(connection) as consultas:
        resposta = cliente.get(LISTA)
    assert resposta.status_code == 200
    assert len(resposta.context["cl"].result_list) == 50
    # session, user, the user's and the groups' permissions, the tenant
    # filter's choices, the planner's estimate, the count (small table), the
    # page (tenants joined), the date hierarchy's MIN/MAX; and the savepoint
    # of the list's guard (relatorios/apps.py, ListaProtegida), created and
    # released: the test runs inside a transaction (outside one, the guard's
    # atomic block is a BEGIN/COMMIT, not a statement).
    assert len(consultas) == 11, "\n".join(q["sql"] for q in consultas)
    pagina = next(q["sql"] for q in consultas if 'JOIN "tenants"' in q["sql"])
    assert '"tenants"' in pagina
    for pesada in ("resultado", "checkpoint", "params", "erro_detalhe"):
        assert f'"relatorio_jobs"."{pesada}"' not in pagina


def test_lista_nao_conta_uma_tabela_grande(
    cliente: Client, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    novo_job(tenant)
    monkeypatch.setattr(
        "relatorios.admin.paginacao.estimar_linhas", lambda consulta: 3_000_000
    )
    with CaptureQueriesContext(connection) as consultas:
        resposta = cliente.get(LISTA)
    assert not any("COUNT(" in q["sql"].upper() for q in consultas)
    assert resposta.context["cl"].result_count == 3_000_000
    assert "cerca de 3000000" in resposta.content.decode()


def test_estimativa_do_planejador_e_um_numero(tenant: Tenant) -> None:
    from relatorios.admin.paginacao import estimar_linhas

    novo_job(tenant)
    assert isinstance(estimar_linhas(RelatorioJob.objects.all()), int)
    assert estimar_linhas([1, 2]) is None


def test_lista_mais_nova_primeiro_com_colunas_de_suporte(
    cliente: Client, tenant: Tenant
) -> None:
    agora = timezone.now()
    antigo = novo_job(tenant, criado_em=agora - timedelta(days=2))
    travado = novo_job(
        tenant,
        status=EstadoDoJob.EXECUTANDO,
        iniciado_em=agora - timedelta(minutes=10),
        heartbeat_em=agora - timedelta(minutes=5),
        tentativas=2,
    )
    falhou = novo_job(
        tenant,
        status=EstadoDoJob.FALHOU,
        erro="x" * 200,
        iniciado_em=agora - timedelta(seconds=90),
        concluido_em=agora - timedelta(seconds=30),
    )
    resposta = cliente.get(LISTA)
    html = resposta.content.decode()
    assert [j.pk for j in resposta.context["cl"].result_list][-1] == antigo
    assert 'job-status-travado">executando (travado)' in html
    assert "há 5 min" in html
    assert "10 min (em curso)" in html
    assert "1 min" in html  # duration of the failed job
    assert "2 d" in html  # age of the old one
    assert "x" * 79 + "…" in html
    assert {travado, falhou} <= ids_na_lista(cliente)


def test_filtros_de_situacao(cliente: Client, tenant: Tenant) -> None:
    agora = timezone.now()
    falhou = novo_job(tenant, status=EstadoDoJob.FALHOU)
    travado = novo_job(
        tenant, status=EstadoDoJob.EXECUTANDO, heartbeat_em=agora - timedelta(minutes=5)
    )
    novo_job(tenant, status=EstadoDoJob.EXECUTANDO, heartbeat_em=agora)
    pendente_antigo = novo_job(tenant, criado_em=agora - timedelta(hours=1))
    novo_job(tenant)
    expirado = novo_job(
        tenant, status=EstadoDoJob.PRONTO, expira_em=agora - timedelta(minutes=1)
    )
    novo_job(tenant, status=EstadoDoJob.PRONTO, expira_em=agora + timedelta(hours=1))
    retentado = novo_job(tenant, status=EstadoDoJob.PENDENTE, tentativas=3)

    assert ids_na_lista(cliente, "?situacao=falhou") == {falhou}
    assert ids_na_lista(cliente, "?situacao=travado") == {travado}
    assert ids_na_lista(cliente, "?situacao=pendente_antigo") == {pendente_antigo}
    assert ids_na_lista(cliente, "?situacao=expirado") == {expirado}
    assert ids_na_lista(cliente, "?situacao=tentativas_3") == {retentado}
    assert ids_na_lista(cliente, "?status__exact=falhou") == {falhou}


def test_filtros_de_tipo_e_tenant(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    estoque = novo_job(tenant, tipo="estoque")
    vendas = novo_job(tenant)
    alheio = novo_job(outro_tenant)
    assert ids_na_lista(cliente, "?tipo=estoque") == {estoque}
    assert ids_na_lista(cliente, f"?tenant__id__exact={tenant.pk}") == {estoque, vendas}
    assert alheio in ids_na_lista(cliente)


def test_busca_por_id_prefixo_da_chave_e_nome_do_tenant(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant
) -> None:
    a = novo_job(tenant)
    b = novo_job(outro_tenant)
    chave = helpers.job(b).chave
    assert a in ids_na_lista(cliente, f"?q={a}")
    assert ids_na_lista(cliente, f"?q={chave[:10].upper()}") == {b}
    assert ids_na_lista(cliente, "?q=rede b") == {b}
    assert ids_na_lista(cliente, "?q=ninguém") == set()


def test_hierarquia_de_datas_sem_varrer_a_tabela(
    cliente: Client, tenant: Tenant
) -> None:
    novo_job(
        tenant,
        criado_em=timezone.datetime(
            2024, 5, 3, 12, tzinfo=timezone.get_current_timezone()
        ),
    )
    novo_job(
        tenant,
        criado_em=timezone.datetime(
            2026, 2, 1, 12, tzinfo=timezone.get_current_timezone()
        ),
    )
    with CaptureQueriesContext(connection) as consultas:
        html = cliente.get(LISTA).content.decode()
    assert not any("DISTINCT" in q["sql"] for q in consultas)
    for ano in ("2024", "2025", "2026"):
        assert f"?criado_em__year={ano}" in html
    html = cliente.get(f"{LISTA}?criado_em__year=2024").content.decode()
    assert "criado_em__month=5" in html
    assert "criado_em__month=6" not in html
    assert ids_na_lista(cliente, "?criado_em__year=2024&criado_em__month=5") != set()


# --- The change view ----------------------------------------------------------------


def test_pagina_do_job_mostra_tudo_formatado_e_a_linha_do_tempo(
    cliente: Client, tenant: Tenant, usuario_suporte: Usuario
) -> None:
    agora = timezone.now()
    job_id = novo_job(
        tenant,
        status=EstadoDoJob.FALHOU,
        tentativas=3,
        iniciado_em=agora - timedelta(minutes=2),
        heartbeat_em=agora - timedelta(minutes=1),
        concluido_em=agora,
        erro="ZeroDivisionError: division by zero",
        erro_detalhe='Traceback (most recent call last):\n  File "x.py", line 1',
        checkpoint={"partes": [{"inicio": "2026-01-01"}], "feitas": 0},
    )
    suporte.reexecutar(job_id=job_id)
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.FALHOU,
        erro="de novo",
        concluido_em=agora,
        erro_detalhe='Traceback (most recent call last):\n  File "x.py", line 1',
    )
    LogEntry.objects.log_actions(
        usuario_suporte.pk, [helpers.job(job_id)], CHANGE, change_message="teste"
    )
    html = cliente.get(f"{LISTA}{job_id}/change/").content.decode()
    assert "&quot;inicio&quot;: " in html  # pretty-printed JSON
    assert "Traceback (most recent call last)" in html
    assert "criado (ou recomeçado)" in html
    assert "concluído: falhou" in html
    assert "suporte: " in html
    assert "teste" in html
    assert "Tentativas: 0 de 3" in html
    assert 'value="Reexecutar"' in html
    assert 'value="Expirar resultado"' not in html


def test_linha_do_tempo_mostra_cada_tentativa_do_historico(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos={"inicio": "2026-01-01", "fim": "2026-01-31"},
        usuario_id=None,
    ).job.id
    job = ciclo.reivindicar(job_id=job_id, trabalhador="maquina-7:4242")
    ciclo.adiar(tentativa=job.tentativa, erro="deadlock no banco", detalhe=None)

    html = cliente.get(f"{LISTA}{job_id}/change/").content.decode()

    assert "tentativa 1 iniciada" in html
    assert "maquina-7:4242" in html
    assert "tentativa 1: adiado (falha transitória)" in html
    assert "deadlock no banco" in html


def test_resultado_grande_e_cortado_com_link_para_baixar(
    cliente: Client, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("relatorios.admin.jobs.LIMITE_DO_TRECHO", 100)
    linhas = [
        {"periodo": "2026-01", "loja": f"L{n}", "receita": "1.00"} for n in range(50)
    ]
    job_id = novo_job(
        tenant,
        status=EstadoDoJob.PRONTO,
        resultado={"linhas": linhas},
        expira_em=timezone.now() + timedelta(hours=1),
    )
    html = cliente.get(f"{LISTA}{job_id}/change/").content.decode()
    assert "Mostrando 100 de " in html
    assert f"{LISTA}{job_id}/resultado.json" in html
    completo = cliente.get(f"{LISTA}{job_id}/resultado.json")
    assert completo.status_code == 200
    assert len(completo.json()["linhas"]) == 50
    planilha = cliente.get(f"{LISTA}{job_id}/resultado.csv")
    assert planilha.status_code == 200
    assert b"".join(planilha.streaming_content).count(b"\r\n") == 51


# --- Actions --------------------------------------------------------------------------


def test_reexecutar_em_massa_conta_e_agrupa_os_motivos(
    cliente: Client, tenant: Tenant
) -> None:
    falhou = novo_job(tenant, status=EstadoDoJob.FALHOU, erro="x")
    pendente = novo_job(tenant)
    pronto = novo_job(
        tenant, status=EstadoDoJob.PRONTO, expira_em=timezone.now() + timedelta(hours=1)
    )
    resposta = agir(cliente, "reexecutar", [falhou, pendente, pronto])
    assert resposta.status_code == 302
    assert helpers.mensagens(resposta) == [
        "1 job reexecutado.",
        "2 jobs sem mudança: só falhou, travado ou expirado pode ser reexecutado (2).",
    ]
    assert helpers.job(falhou).status == EstadoDoJob.PENDENTE
    assert helpers.job(pronto).status == EstadoDoJob.PRONTO
    registros = {
        int(e.object_id): e.get_change_message()
        for e in LogEntry.objects.filter(action_flag=CHANGE)
    }
    recusa = (
        "reexecutar sem efeito: só falhou, travado ou expirado pode ser reexecutado"
    )
    assert registros == {
        falhou: "reexecutado pelo suporte",
        pendente: recusa,
        pronto: recusa,
    }


def test_marcar_como_falhou_pede_o_motivo_e_o_registra(
    cliente: Client, tenant: Tenant, usuario_suporte: Usuario
) -> None:
    pendente = novo_job(tenant)
    pronto = novo_job(tenant, status=EstadoDoJob.PRONTO)
    pergunta = agir(cliente, "marcar_como_falhou", [pendente, pronto])
    assert pergunta.status_code == 200
    assert 'name="motivo"' in pergunta.content.decode()
    assert helpers.job(pendente).status == EstadoDoJob.PENDENTE

    sem_motivo = cliente.post(
        LISTA,
        {
            "action": "marcar_como_falhou",
            "_selected_action": [pendente],
            "confirmar": "1",
            "motivo": " ",
        },
    )
    assert sem_motivo.status_code == 200
    assert helpers.job(pendente).status == EstadoDoJob.PENDENTE

    resposta = cliente.post(
        LISTA,
        {
            "action": "marcar_como_falhou",
            "_selected_action": [pendente, pronto],
            "confirmar": "1",
            "motivo": "dados do ERP corrompidos; refaça amanhã",
        },
    )
    assert resposta.status_code == 302
    assert helpers.mensagens(resposta) == [
        "1 job marcado como falhou.",
        "1 job sem mudança: "
        "só pendente ou executando pode ser marcado como falhou (1).",
    ]
    job = helpers.job(pendente)
    assert job.status == EstadoDoJob.FALHOU
    assert job.erro == "dados do ERP corrompidos; refaça amanhã"
    entrada = LogEntry.objects.get(object_id=str(pendente))
    assert entrada.user == usuario_suporte
    assert entrada.get_change_message() == (
        "marcado como falhou pelo suporte; "
        "motivo: dados do ERP corrompidos; refaça amanhã"
    )


def test_expirar_resultado_em_massa(cliente: Client, tenant: Tenant) -> None:
    valido = novo_job(
        tenant, status=EstadoDoJob.PRONTO, expira_em=timezone.now() + timedelta(hours=1)
    )
    resposta = agir(cliente, "expirar_resultado", [valido])
    assert helpers.mensagens(resposta) == ["1 job teve o resultado expirado."]
    assert helpers.job(valido).expira_em < timezone.now()


def test_acao_em_massa_tem_limite(
    cliente: Client, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("relatorios.admin.comum.LIMITE_EM_MASSA", 2)
    ids = [novo_job(tenant, status=EstadoDoJob.FALHOU) for _ in range(3)]
    resposta = agir(cliente, "reexecutar", ids[:1], select_across="1")
    assert "no máximo 2 jobs" in helpers.mensagens(resposta)[0]
    assert {helpers.job(i).status for i in ids} == {EstadoDoJob.FALHOU}
    assert not LogEntry.objects.exists()


def test_acoes_de_um_job_na_sua_pagina(cliente: Client, tenant: Tenant) -> None:
    job_id = novo_job(
        tenant,
        status=EstadoDoJob.EXECUTANDO,
        heartbeat_em=timezone.now() - timedelta(minutes=10),
        tentativas=1,
    )
    pagina = f"{LISTA}{job_id}/change/"
    html = cliente.get(pagina).content.decode()
    assert 'value="Reexecutar"' in html  # stuck
    assert 'value="Marcar como falhou"' in html

    resposta = cliente.post(f"{LISTA}{job_id}/acoes/reexecutar/")
    assert resposta["Location"] == pagina
    assert helpers.job(job_id).status == EstadoDoJob.PENDENTE

    sem_motivo = cliente.post(
        f"{LISTA}{job_id}/acoes/marcar_como_falhou/", {"motivo": ""}
    )
    assert "Informe o motivo." in helpers.mensagens(sem_motivo)
    cliente.post(f"{LISTA}{job_id}/acoes/marcar_como_falhou/", {"motivo": "teste"})
    assert helpers.job(job_id).erro == "teste"
    assert LogEntry.objects.filter(object_id=str(job_id)).count() == 2
    assert cliente.get(f"{LISTA}{job_id}/acoes/reexecutar/").status_code == 405
    assert cliente.post(f"{LISTA}{job_id}/acoes/apagar/").status_code == 404


# --- Landing page -------------------------------------------------------------------


def test_pagina_inicial_mostra_os_numeros_do_suporte(
    cliente: Client, tenant: Tenant
) -> None:
    agora = timezone.now()
    novo_job(tenant, status=EstadoDoJob.FALHOU, concluido_em=agora - timedelta(hours=1))
    novo_job(tenant, status=EstadoDoJob.FALHOU, concluido_em=agora - timedelta(days=2))
    novo_job(
        tenant, status=EstadoDoJob.EXECUTANDO, heartbeat_em=agora - timedelta(hours=1)
    )
    novo_job(tenant, criado_em=agora - timedelta(hours=2))
    novo_job(tenant, tipo="estoque")
    resposta = cliente.get("/admin/")
    numeros = resposta.context["indicadores"]
    assert numeros.falhos_24h == 1
    assert numeros.travados == 1
    assert numeros.pendentes == 2
    assert numeros.pendentes_antigos == 1
    assert numeros.mensagens_na_fila == OrmQ.objects.count()
    assert (
        timedelta(hours=2) <= numeros.idade_do_pendente_mais_antigo < timedelta(hours=3)
    )
    assert numeros.por_tipo == {
        "estoque": {"pendente": 1},
        # Failed jobs created in the last 24 h, whenever they failed.
        "vendas": {"pendente": 1, "executando": 1, "falhou": 2},
    }
    html = resposta.content.decode()
    assert 'data-indicador="travados">1<' in html
    assert "há 2" in html


def test_suporte_ve_e_desliga_a_antecipacao_do_tenant(
    cliente: Client, tenant: Tenant
) -> None:
    IndicadorDeAntecipacao.objects.create(
        tenant=tenant,
        assentados=4,
        aproveitados=3,
        pedidos=10,
        imediatos=7,
        calculado_em=timezone.now(),
    )
    lista = cliente.get("/admin/relatorios/tenant/").content.decode()

    resposta = cliente.post(
        f"/admin/relatorios/tenant/{tenant.pk}/change/", {"dominios_email": ""}
    )

    assert "75% (3 de 4)" in lista
    assert "70% (7 de 10)" in lista
    assert resposta.status_code == 302
    assert Tenant.objects.get(pk=tenant.pk).antecipar is False
