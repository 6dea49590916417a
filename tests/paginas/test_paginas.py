"""The managers' pages, server side (the browser test drives them for real)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from relatorios.jobs import pedidos
from relatorios.models import EstadoDoJob, RelatorioJob, Tenant, Usuario
from relatorios.paginas.forms import PedidoForm
from relatorios.tipos.base import TipoRelatorio
from relatorios.tipos.vendas import Vendas
from tests import helpers
from tests.tipos_de_teste import Lento

pytestmark = pytest.mark.django_db

PEDIDO = {
    "vendas-inicio": "2026-01-01",
    "vendas-fim": "2026-01-31",
    "vendas-agrupar": "mes",
}
RESULTADO = {
    "agrupar": "mes",
    "linhas": [
        {
            "periodo": "2026-01",
            "loja": "L001",
            "loja_nome": "Loja Centro",
            "vendas": 1200,
            "quantidade": 3400,
            "receita": "123456.78",
        },
        {
            "periodo": "2026-01",
            "loja": "L002",
            "loja_nome": "Loja Sul",
            "vendas": 5,
            "quantidade": 7,
            "receita": "10.50",
        },
    ],
    "totais": {"vendas": 1205, "quantidade": 3407, "receita": "123467.28"},
}


@pytest.fixture
def gerente(tenant: Tenant) -> Usuario:
    helpers.criar_lojas(tenant, "L001", "L002")
    return helpers.criar_usuario(tenant, first_name="Ana", last_name="Souza")[0]


@pytest.fixture
def cliente(gerente: Usuario) -> Client:
    cliente = Client()
    cliente.force_login(gerente)
    return cliente


def submeter(tenant: Tenant, usuario: Usuario | None = None, **params: Any) -> int:
    brutos = {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes", **params}
    return pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="vendas",
        params_brutos=brutos,
        usuario_id=usuario.pk if usuario else None,
    ).job.id


def pronto(job_id: int, resultado: Any = RESULTADO, **campos: Any) -> None:
    agora = timezone.now()
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.PRONTO,
        resultado=resultado,
        progresso=100,
        tentativas=1,
        iniciado_em=agora - timedelta(seconds=3),
        concluido_em=agora,
        expira_em=agora + timedelta(hours=1),
        **campos,
    )


def test_pagina_exige_login(client: Client, tenant: Tenant) -> None:
    job_id = submeter(tenant)
    for caminho in ("/painel/", f"/painel/jobs/{job_id}/"):
        resposta = client.get(caminho)
        assert resposta.status_code == 302
        assert resposta["Location"].startswith(f"/entrar/?next={caminho}")


def test_login_leva_ao_painel(client: Client, gerente: Usuario) -> None:
    resposta = client.post(
        "/entrar/", {"username": gerente.username, "password": "senha-de-teste-123"}
    )
    assert resposta.status_code == 302
    assert resposta["Location"] == "/painel/"
    assert client.get("/painel/").status_code == 200


def test_raiz_leva_ao_painel(client: Client) -> None:
    assert client.get("/")["Location"] == "/painel/"


def test_equipe_sem_tenant_nao_usa_as_paginas(db: None) -> None:
    suporte = helpers.criar_usuario(None, is_staff=True)[0]
    cliente = Client()
    cliente.force_login(suporte)
    # Support logging in at the managers' door lands in the admin.
    assert cliente.get("/painel/")["Location"] == "/admin/"
    # A user with neither a tenant nor the staff flag has no place: 403.
    ninguem = Client()
    ninguem.force_login(helpers.criar_usuario(None)[0])
    resposta = ninguem.get("/painel/")
    assert resposta.status_code == 403
    assert "gerentes de uma empresa cliente" in resposta.content.decode()


def test_painel_tem_um_formulario_por_tipo_com_as_lojas_do_tenant(
    cliente: Client, outro_tenant: Tenant
) -> None:
    helpers.criar_lojas(outro_tenant, "OUTRA")
    html = cliente.get("/painel/").content.decode()
    for tipo in ("vendas", "comissoes", "estoque"):
        assert f'action="/painel/relatorios/{tipo}/"' in html
    assert 'type="date"' in html
    assert 'name="vendas-lojas"' in html
    assert 'value="L001"' in html
    assert "OUTRA" not in html
    # estoque's result does not depend on agrupar: the form does not ask.
    assert 'name="estoque-agrupar"' not in html
    assert 'name="vendas-agrupar"' in html
    assert "csrfmiddlewaretoken" in html
    assert 'name="viewport"' in html


class DoMesPassado(Lento):
    tipo = "teste_mes_passado"
    titulo = "Do mês passado"

    def periodo_sugerido(self, hoje: date) -> tuple[date, date]:
        fim = hoje.replace(day=1) - timedelta(days=1)
        return fim.replace(day=1), fim


@pytest.mark.parametrize(
    ("tipo", "inicio", "fim"),
    [
        (DoMesPassado(), "2026-02-01", "2026-02-28"),
        (Vendas(), "2026-03-01", "2026-03-10"),
    ],
)
def test_o_formulario_comeca_no_periodo_que_o_tipo_sugere(
    tipo: TipoRelatorio, inicio: str, fim: str
) -> None:
    formulario = PedidoForm(tipo=tipo, lojas=[], hoje=date(2026, 3, 10))

    assert (formulario["inicio"].value(), formulario["fim"].value()) == (inicio, fim)


def test_painel_lista_so_os_jobs_do_tenant_com_quem_pediu(
    cliente: Client, tenant: Tenant, outro_tenant: Tenant, gerente: Usuario
) -> None:
    meu = submeter(tenant, gerente)
    alheio = submeter(outro_tenant)
    html = cliente.get("/painel/").content.decode()
    assert f'href="/painel/jobs/{meu}/"' in html
    assert f'href="/painel/jobs/{alheio}/"' not in html
    assert "Ana Souza" in html
    assert "janeiro de 2026 · por mês · todas as lojas" in html


def test_pedido_cria_o_job_e_leva_a_sua_pagina(
    cliente: Client, gerente: Usuario
) -> None:
    resposta = cliente.post(
        "/painel/relatorios/vendas/", {**PEDIDO, "vendas-lojas": ["L002", "L001"]}
    )
    job = RelatorioJob.objects.get()
    assert resposta.status_code == 302
    assert resposta["Location"] == f"/painel/jobs/{job.pk}/"
    assert job.params == {
        "inicio": "2026-01-01",
        "fim": "2026-01-31",
        "agrupar": "mes",
        "lojas": ["L001", "L002"],
    }
    assert job.solicitado_por == gerente


def test_vinte_gerentes_com_o_mesmo_filtro_caem_no_mesmo_job(tenant: Tenant) -> None:
    helpers.criar_lojas(tenant, "L001")
    destinos = set()
    for _ in range(20):
        cliente = Client()
        cliente.force_login(helpers.criar_usuario(tenant)[0])
        destinos.add(cliente.post("/painel/relatorios/vendas/", PEDIDO)["Location"])
    assert len(destinos) == 1
    assert RelatorioJob.objects.count() == 1


def test_o_mesmo_pedido_pela_api_e_pela_pagina_e_um_job_so(
    cliente: Client, gerente: Usuario
) -> None:
    token = helpers.criar_usuario(gerente.tenant)[1]
    pela_api = helpers.cliente_com_token(token).post(
        "/relatorios/vendas",
        {"inicio": "2026-01-01", "fim": "2026-01-31", "agrupar": "mes"},
        content_type="application/json",
    )
    pela_pagina = cliente.post("/painel/relatorios/vendas/", PEDIDO)
    assert pela_pagina["Location"] == f"/painel/jobs/{pela_api.json()['id']}/"


@pytest.mark.parametrize(
    ("campos", "campo", "mensagem"),
    [
        ({"vendas-fim": "2025-12-31"}, "vendas-fim", "fim deve ser igual ou posterior"),
        ({"vendas-inicio": "31/01/2026"}, "vendas-inicio", "data inválida"),
        ({"vendas-inicio": ""}, "vendas-inicio", "obrigatório"),
        ({"vendas-fim": "2036-01-01"}, "vendas-fim", "não pode passar de 5 anos"),
        ({"vendas-lojas": ["NAO-EXISTE"]}, "vendas-lojas", "escolha válida"),
    ],
)
def test_pedido_invalido_mostra_o_erro_no_campo_sem_criar_job(
    cliente: Client, campos: dict[str, Any], campo: str, mensagem: str
) -> None:
    resposta = cliente.post("/painel/relatorios/vendas/", {**PEDIDO, **campos})
    html = resposta.content.decode()
    assert resposta.status_code == 400
    assert mensagem in html
    assert f'name="{campo}"' in html
    assert "com-erro" in html
    assert RelatorioJob.objects.count() == 0


def test_loja_que_o_servico_recusa_aparece_no_campo(
    cliente: Client, gerente: Usuario
) -> None:
    # The form offered L001 when it was rendered; it was removed before submit.
    gerente.tenant.lojas.filter(codigo="L001").delete()
    formulario_antigo = {**PEDIDO, "vendas-lojas": ["L001"]}
    resposta = cliente.post("/painel/relatorios/vendas/", formulario_antigo)
    assert resposta.status_code == 400
    assert RelatorioJob.objects.count() == 0


@override_settings(RELATORIOS_MAX_PENDENTES_POR_TENANT=1)
def test_limite_de_pendentes_e_uma_mensagem_amigavel(
    cliente: Client, tenant: Tenant
) -> None:
    submeter(tenant, inicio="2025-01-01")
    resposta = cliente.post("/painel/relatorios/vendas/", PEDIDO)
    assert resposta.status_code == 429
    assert "já tem 1 relatórios na fila" in resposta.content.decode()
    assert RelatorioJob.objects.count() == 1


def test_tipo_desconhecido_e_404(cliente: Client) -> None:
    assert cliente.post("/painel/relatorios/nada/", PEDIDO).status_code == 404


def test_formularios_exigem_csrf(gerente: Usuario, tenant: Tenant) -> None:
    job_id = submeter(tenant)
    cliente = Client(enforce_csrf_checks=True)
    cliente.force_login(gerente)
    assert cliente.post("/painel/relatorios/vendas/", PEDIDO).status_code == 403
    assert cliente.post(f"/painel/jobs/{job_id}/repetir/").status_code == 403
    assert cliente.post("/sair/").status_code == 403
    token = cliente.get("/painel/").cookies["csrftoken"].value
    resposta = cliente.post(
        "/painel/relatorios/vendas/", {**PEDIDO, "csrfmiddlewaretoken": token}
    )
    assert resposta.status_code == 302


def test_job_pendente_mostra_progresso_e_botao_desabilitado(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    resposta = cliente.get(f"/painel/jobs/{job_id}/")
    html = resposta.content.decode()
    assert resposta.status_code == 200
    assert 'data-campo="status">Na fila<' in html
    assert '<progress max="100" value="0"' in html
    assert "disabled" in html
    assert "Já em andamento" in html
    # Without JavaScript the page refreshes itself while the job runs.
    assert '<noscript><meta http-equiv="refresh"' in html
    assert f'data-url-status="/relatorios/jobs/{job_id}"' in html
    assert 'data-retry-after="2"' in html
    assert "/static/relatorios/paginas." in html


def test_job_executando_mostra_o_progresso(cliente: Client, tenant: Tenant) -> None:
    job_id = submeter(tenant)
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.EXECUTANDO, progresso=66, iniciado_em=timezone.now()
    )
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    assert 'value="66"' in html
    assert "Executando" in html
    assert "Iniciado em" in html


def test_job_pronto_mostra_tabela_com_totais_e_o_csv(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    pronto(job_id)
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    assert "Pronto" in html
    assert f'href="/relatorios/jobs/{job_id}/resultado.csv"' in html
    assert '<th scope="col">Período</th>' in html
    # Each cell carries what sorting compares: the stored value, not the text.
    assert '<td data-valor="2026-01">01/2026</td>' in html
    assert '<td data-valor="123456.78" class="num">123.456,78</td>' in html
    assert '<td data-valor="1200" class="num">1.200</td>' in html
    assert "<tfoot><tr><th>Total</th>" in html
    assert "<th>123.467,28</th>" in html
    assert "Já em andamento" not in html
    assert "<noscript><meta" not in html
    assert "2 linhas" in html


def test_tabela_grande_mostra_o_comeco_e_remete_ao_csv(
    cliente: Client, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("relatorios.paginas.jobs.LINHAS_NA_PAGINA", 1)
    job_id = submeter(tenant)
    pronto(job_id)
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    # (The chart, above the table, draws every line: both stores' names.)
    assert '<td data-valor="Loja Centro">Loja Centro</td>' in html
    assert '<td data-valor="Loja Sul">' not in html
    assert "a tabela mostra as primeiras 1, os arquivos têm todas" in html
    assert "Total do período, todas as 2 linhas" in html


def test_job_falhou_mostra_o_erro_sem_traceback_e_tenta_de_novo(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    RelatorioJob.objects.filter(pk=job_id).update(
        status=EstadoDoJob.FALHOU,
        erro="o relatório excedeu o tempo limite de consulta",
        erro_detalhe="Traceback (most recent call last): segredo",
    )
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    assert "o relatório excedeu o tempo limite de consulta" in html
    assert "Traceback" not in html
    assert "Tentar novamente" in html

    resposta = cliente.post(f"/painel/jobs/{job_id}/repetir/")
    assert resposta["Location"] == f"/painel/jobs/{job_id}/"
    job = helpers.job(job_id)
    assert job.status == EstadoDoJob.PENDENTE
    assert job.erro is None


def test_resultado_expirado_pode_ser_gerado_de_novo(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    pronto(job_id)
    RelatorioJob.objects.filter(pk=job_id).update(
        expira_em=timezone.now() - timedelta(minutes=1)
    )
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    assert "Expirado" in html
    assert "Gerar novamente" in html
    cliente.post(f"/painel/jobs/{job_id}/repetir/")
    assert helpers.job(job_id).status == EstadoDoJob.PENDENTE


def test_repetir_job_em_andamento_nao_muda_nada(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    antes = helpers.job(job_id)
    resposta = cliente.post(f"/painel/jobs/{job_id}/repetir/")
    assert resposta["Location"] == f"/painel/jobs/{job_id}/"
    assert helpers.job(job_id).criado_em == antes.criado_em


def test_resultado_sem_linhas_aparece_como_esta(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    pronto(job_id, resultado={"partes": [{"inicio": "2026-01-01"}]})
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    assert "partes" in html
    assert "Baixar CSV" not in html
    assert "Baixar Excel" not in html


@pytest.mark.parametrize("sufixo", ["", "estado/"])
def test_job_de_outro_tenant_e_404(
    cliente: Client, outro_tenant: Tenant, sufixo: str
) -> None:
    alheio = submeter(outro_tenant)
    assert cliente.get(f"/painel/jobs/{alheio}/{sufixo}").status_code == 404
    assert cliente.get(f"/painel/jobs/987654/{sufixo}").status_code == 404


def test_repetir_job_de_outro_tenant_e_404(
    cliente: Client, outro_tenant: Tenant
) -> None:
    alheio = submeter(outro_tenant)
    RelatorioJob.objects.filter(pk=alheio).update(status=EstadoDoJob.FALHOU)
    assert cliente.post(f"/painel/jobs/{alheio}/repetir/").status_code == 404
    assert helpers.job(alheio).status == EstadoDoJob.FALHOU


def test_fragmento_de_estado_e_so_a_parte_que_muda(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    pronto(job_id)
    resposta = cliente.get(f"/painel/jobs/{job_id}/estado/")
    html = resposta.content.decode()
    assert "<html" not in html
    assert "123.456,78" in html
    assert resposta["Cache-Control"] == "no-store"


def test_horarios_no_fuso_do_tenant(cliente: Client, tenant: Tenant) -> None:
    job_id = submeter(tenant)
    RelatorioJob.objects.filter(pk=job_id).update(
        criado_em=datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    )
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    assert "01/03/2026 09:00:00" in html  # America/Sao_Paulo, UTC-3


def test_sair_encerra_a_sessao(cliente: Client) -> None:
    assert cliente.post("/sair/")["Location"] == "/entrar/"
    assert cliente.get("/painel/").status_code == 302


def test_estaticos_sao_servidos_pelo_whitenoise(client: Client) -> None:
    html = client.get("/entrar/").content.decode()
    caminho = html.split('href="/static/relatorios/paginas.')[1].split('"')[0]
    resposta = client.get(f"/static/relatorios/paginas.{caminho}")
    assert resposta.status_code == 200
    assert "immutable" in resposta["Cache-Control"]


def test_login_exige_csrf(gerente: Usuario) -> None:
    cliente = Client(enforce_csrf_checks=True)
    dados = {"username": gerente.username, "password": "senha-de-teste-123"}
    assert cliente.post("/entrar/", dados).status_code == 403


def test_job_aguardando_nova_tentativa_diz_quando(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = submeter(tenant)
    RelatorioJob.objects.filter(pk=job_id).update(
        tentativas=1,
        erro="conflito temporário no banco de dados",
        proxima_tentativa_em=datetime(2026, 3, 1, 12, 30, tzinfo=UTC),
    )
    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()
    assert "A tentativa anterior falhou (conflito temporário no banco de dados)" in html
    assert "Nova tentativa às 09:30" in html
    assert "Já em andamento" in html


def test_total_de_mais_linhas_que_a_tabela_diz_o_que_soma(
    cliente: Client, tenant: Tenant
) -> None:
    linha = RESULTADO["linhas"][0]
    linhas = [{**linha, "loja": f"L{n:04d}"} for n in range(1670)]
    job_id = submeter(tenant)
    pronto(job_id, {**RESULTADO, "linhas": linhas})

    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()

    assert html.count("<tr><td") == 500
    assert "<tfoot><tr><th>Total do período, todas as 1.670 linhas</th>" in html


def test_fechamento_mostra_o_mes_por_extenso_e_variacoes_com_sinal(
    cliente: Client, tenant: Tenant
) -> None:
    job_id = pedidos.submeter(
        tenant_id=tenant.pk,
        tipo="fechamento",
        params_brutos={"inicio": "2026-11-01", "fim": "2026-11-30"},
        usuario_id=None,
    ).job.id
    figuras = {
        "receita": "100.00",
        "variacao_receita": "0.1234",
        "devolucoes": "5.00",
        "variacao_devolucoes": "-0.0310",
        "comissoes": "3.00",
        "variacao_comissoes": "0.0000",
        "estoque_final": "50.00",
        "variacao_estoque_final": None,
    }
    pronto(
        job_id,
        {
            "mes": "2026-11",
            "mes_anterior": "2026-10",
            "linhas": [{"loja": "L001", "loja_nome": "Centro", **figuras}],
            "totais": figuras,
        },
    )

    html = cliente.get(f"/painel/jobs/{job_id}/").content.decode()

    assert '<p class="resumo">novembro de 2026 · todas as lojas</p>' in html
    assert "Novembro de 2026 comparado com outubro de 2026" in html
    assert '<td data-valor="0.1234" class="num alta">+12,34%</td>' in html
    assert '<td data-valor="-0.0310" class="num queda">−3,10%</td>' in html
    assert '<td data-valor="0.0000" class="num">0,00%</td>' in html
