"""No 5xx for anything a client sends: the README's list, against a live web server.

Every case is a raw HTTP request (http.client: no client library fixes the
input up) to one web server started for the module, with a real token.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from django.test import Client

from relatorios.jobs import consultas
from relatorios.models import Agendamento, RelatorioJob, Tenant, Webhook
from tests import helpers, processos

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processos]

PEDIDO = {"inicio": "2026-01-01", "fim": "2026-01-31"}
AGENDAMENTO = {
    "tipo": "vendas",
    "periodo": "mes_anterior",
    "cron": "0 3 1 * *",
    "prazo_minutos": 180,
}
WEBHOOK = {"url": "https://exemplo.com.br/ganchos", "eventos": ["job.pronto"]}
ANINHADO = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture(scope="module")
def servidor_do_modulo(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with django_db_blocker.unblock():
        processo, url = processos.iniciar_web(
            processos.RAIZ / "test-output" / "test_entrada_hostil" / "web.log",
            WEB_WORKERS="2",
        )
    yield url
    processo.parar()


@pytest.fixture
def alvo(servidor_do_modulo: str) -> tuple[str, int]:
    host, porta = servidor_do_modulo.removeprefix("http://").split(":")
    return host, int(porta)


@pytest.fixture
def chave(tenant: Tenant) -> str:
    return helpers.criar_usuario(tenant)[1]


def enviar(
    alvo: tuple[str, int],
    metodo: str,
    caminho: str,
    *,
    chave: str | None = None,
    corpo: bytes | None = None,
    cabecalhos: dict[str, str] | None = None,
) -> tuple[int, http.client.HTTPResponse, bytes]:
    conexao = http.client.HTTPConnection(*alvo, timeout=20)
    try:
        conexao.putrequest(metodo, caminho, skip_accept_encoding=True)
        todos = {"Content-Type": "application/json"} if corpo is not None else {}
        if chave is not None:
            todos["Authorization"] = f"Token {chave}"
        todos.update(cabecalhos or {})
        if corpo is not None and "Content-Length" not in todos:
            todos["Content-Length"] = str(len(corpo))
        for nome, valor in todos.items():
            conexao.putheader(nome, valor)
        conexao.endheaders(corpo)
        resposta = conexao.getresponse()
        return resposta.status, resposta, resposta.read()
    finally:
        conexao.close()


def erro_json(resposta: http.client.HTTPResponse, corpo: bytes) -> Any:
    assert resposta.getheader("Content-Type", "").startswith("application/json")
    dados = json.loads(corpo)
    assert isinstance(dados["erro"], str)
    assert dados["erro"]
    return dados


# --- bodies --------------------------------------------------------------------

CORPOS_RUINS = [
    pytest.param(ANINHADO, "application/json", id="100000-arrays-aninhados"),
    pytest.param(b'{"inicio": ' + ANINHADO[:60_000] + b"}", None, id="campo-aninhado"),
    pytest.param(b'{"inicio": "\xff\xfe2026"}', None, id="utf8-invalido"),
    pytest.param(b"\xef\xbb\xbf" + json.dumps(PEDIDO).encode(), None, id="bom"),
    pytest.param(
        b'{"inicio": "2026-01-01\\u0000", "fim": "x"}', None, id="nul-escapado"
    ),
    pytest.param(b'{"inicio": "2026\x00-01-01"}', None, id="nul-cru"),
    pytest.param(b'{"in\\u0000icio": "2026-01-01"}', None, id="nul-na-chave"),
    pytest.param(
        b'{"inicio": 1' + b"0" * 5000 + b"}", None, id="inteiro-de-5000-digitos"
    ),
    pytest.param(b'{"inicio": 1e999}', None, id="numero-infinito"),
    pytest.param(b'{"inicio": NaN}', None, id="nan"),
    pytest.param(b'{"inicio": -Infinity}', None, id="infinity"),
    pytest.param(b'{"lojas": [1e308, -1e308]}', None, id="lojas-numeros"),
    pytest.param(b"null", None, id="null"),
    pytest.param(b"12345678901234567890123", None, id="so-um-numero"),
    pytest.param(b'{"inicio": "2026-01-01",', None, id="truncado"),
    pytest.param(json.dumps(PEDIDO).encode(), "text/plain", id="text-plain"),
    pytest.param(
        json.dumps(PEDIDO).encode(), "application/x-www-form-urlencoded", id="form"
    ),
    pytest.param(
        b"--x\r\n\r\n--x--", "multipart/form-data; boundary=x", id="multipart"
    ),
    pytest.param(b"<a/>", "application/xml", id="xml"),
    pytest.param(
        json.dumps(PEDIDO).encode("utf-16"),
        "application/json; charset=utf-16",
        id="utf16",
    ),
    pytest.param(json.dumps(PEDIDO).encode(), "", id="content-type-vazio"),
]


@pytest.mark.parametrize(("corpo", "tipo"), CORPOS_RUINS)
@pytest.mark.parametrize("caminho", ["/relatorios/vendas", "/relatorios/agendamentos"])
def test_corpo_hostil_e_400_json(
    alvo: tuple[str, int], chave: str, caminho: str, corpo: bytes, tipo: str | None
) -> None:
    cabecalhos = {"Content-Type": tipo} if tipo is not None else {}
    codigo, resposta, texto = enviar(
        alvo, "POST", caminho, chave=chave, corpo=corpo, cabecalhos=cabecalhos
    )
    assert codigo == 400, texto[:300]
    erro_json(resposta, texto)


@pytest.mark.parametrize(
    "campos",
    [
        {"prazo_minutos": 10**30},
        {"prazo_minutos": -(10**30)},
        {"prazo_minutos": 1e300},
        {"prazo_minutos": "180"},
        {"prazo_minutos": True},
        {"nome": "a" * 10_000},
        {"nome": ["x"]},
        {"cron": 5},
        {"cron": "* * * * * * * * * * *"},
        {"cron": "0 3 31 2 *"},
        {"periodo": {"x": 1}},
        {"tipo": ["vendas"]},
        {"lojas": [[[[[]]]]]},
        {"lojas": "L1"},
        {"destinatarios": "ninguem"},
        {"destinatarios": ["nao-e-email"]},
        {"destinatarios": [{"a": 1}]},
        {"recuperacao": None, "agrupar": 7},
    ],
    ids=lambda campos: "-".join(campos),
)
def test_agendamento_com_valores_absurdos_e_400(
    alvo: tuple[str, int], chave: str, campos: dict[str, Any]
) -> None:
    corpo = json.dumps({**AGENDAMENTO, **campos}).encode()
    codigo, resposta, texto = enviar(
        alvo, "POST", "/relatorios/agendamentos", chave=chave, corpo=corpo
    )
    assert codigo == 400, texto[:300]
    erro_json(resposta, texto)


@pytest.mark.parametrize(
    "campos",
    [
        {"inicio": 10**30},
        {"inicio": "9999999-01-01"},
        {"inicio": "0000-01-01"},
        {"inicio": "2026-02-30"},
        {"inicio": "2026-01-01T25:00:00Z"},
        {"fim": "2026-01-31T00:00:00+99:00"},
        {"agrupar": 7},
        {"lojas": [None]},
        {"lojas": ["L" * 100_000]},
        {"notificar_email": "x" * 1000},
    ],
    ids=lambda campos: "-".join(campos),
)
def test_pedido_com_valores_absurdos_e_400(
    alvo: tuple[str, int], chave: str, campos: dict[str, Any]
) -> None:
    corpo = json.dumps({**PEDIDO, **campos}).encode()
    codigo, resposta, texto = enviar(
        alvo, "POST", "/relatorios/vendas", chave=chave, corpo=corpo
    )
    assert codigo == 400, texto[:300]
    erro_json(resposta, texto)


def test_charset_declarado_e_ignorado_json_e_utf8(
    alvo: tuple[str, int], chave: str
) -> None:
    codigo, _, texto = enviar(
        alvo,
        "POST",
        "/relatorios/vendas",
        chave=chave,
        corpo=json.dumps({**PEDIDO, "lojas": []}).encode(),
        cabecalhos={"Content-Type": "application/json; charset=nao-existe"},
    )
    assert codigo == 202, texto[:300]


def test_corpo_acima_do_limite_e_413_sem_ser_lido(
    alvo: tuple[str, int], chave: str
) -> None:
    # Declares 100 MB and sends none of it: a server that read the body would
    # wait for it until the client's timeout instead of answering.
    conexao = http.client.HTTPConnection(*alvo, timeout=10)
    conexao.putrequest("POST", "/relatorios/vendas")
    conexao.putheader("Authorization", f"Token {chave}")
    conexao.putheader("Content-Type", "application/json")
    conexao.putheader("Content-Length", str(100 * 1024 * 1024))
    conexao.endheaders()
    resposta = conexao.getresponse()
    texto = resposta.read()
    conexao.close()
    assert resposta.status == 413
    assert "limite" in erro_json(resposta, texto)["erro"]


def test_corpo_logo_acima_do_limite_e_413(
    alvo: tuple[str, int], chave: str, settings: Any
) -> None:
    corpo = b" " * (settings.RELATORIOS_CORPO_MAX_BYTES + 1)
    codigo, resposta, texto = enviar(
        alvo, "POST", "/relatorios/vendas", chave=chave, corpo=corpo
    )
    assert codigo == 413
    erro_json(resposta, texto)


def test_corpo_em_chunks_sem_content_length_nao_e_lido(
    alvo: tuple[str, int], chave: str
) -> None:
    conexao = http.client.HTTPConnection(*alvo, timeout=20)
    conexao.request(
        "POST",
        "/relatorios/vendas",
        body=iter([ANINHADO[:50_000], ANINHADO[-50_000:]]),
        headers={
            "Authorization": f"Token {chave}",
            "Content-Type": "application/json",
        },
        encode_chunked=True,
    )
    resposta = conexao.getresponse()
    texto = resposta.read()
    conexao.close()
    assert resposta.status == 400
    assert erro_json(resposta, texto)["campo"] == "inicio"


@pytest.mark.parametrize(
    "cabecalhos",
    [
        {"X-Grande": "a" * 20_000},
        {f"X-{i}": "a" for i in range(200)},
        {"Authorization": "Token " + "\u00ff" * 40},
        {"Authorization": "Token a b c"},
        {"Authorization": "Token " + "a" * 5000},
        {"Accept": "text/html"},
        {"Content-Length": "-5"},
        {"Content-Length": "abc"},
        {"Host": "\u00e9vil.example"},
    ],
    ids=[
        "cabecalho-grande",
        "cabecalhos-demais",
        "token-latin1",
        "token-com-espacos",
        "token-enorme",
        "accept-html",
        "content-length-negativo",
        "content-length-texto",
        "host-invalido",
    ],
)
def test_cabecalhos_hostis_nao_dao_5xx(
    alvo: tuple[str, int], chave: str, cabecalhos: dict[str, str]
) -> None:
    conexao = http.client.HTTPConnection(*alvo, timeout=20)
    conexao.putrequest("GET", "/relatorios/jobs/1", skip_host="Host" in cabecalhos)
    for nome, valor in {"Authorization": f"Token {chave}", **cabecalhos}.items():
        conexao.putheader(nome, valor.encode("latin-1"))
    conexao.endheaders()
    resposta = conexao.getresponse()
    resposta.read()
    conexao.close()
    assert 400 <= resposta.status < 500


def test_linha_de_pedido_enorme_nao_da_5xx(alvo: tuple[str, int], chave: str) -> None:
    codigo, _, _ = enviar(
        alvo, "GET", "/relatorios/jobs/1?" + "a" * 10_000, chave=chave
    )
    assert 400 <= codigo < 500


# --- texts no database can store: lone UTF-16 surrogates (and NUL) ------------


def operacoes_de_escrita(*, com_corpo: bool) -> list[Any]:
    """Every write operation of the committed OpenAPI document (kept current by
    test_openapi.py), with or without a request body, ids filled in later."""
    documento = yaml.safe_load((processos.RAIZ / "docs" / "openapi.yaml").read_text())
    return [
        pytest.param(metodo.upper(), caminho, id=f"{metodo}-{caminho}")
        for caminho, operacoes in documento["paths"].items()
        for metodo, operacao in operacoes.items()
        if metodo in ("post", "put", "patch", "delete")
        and ("requestBody" in operacao) == com_corpo
    ]


def concreto(caminho: str, tenant: Tenant) -> str:
    """The path with its ids filled in by rows of the tenant's own, so a write
    to one schedule or webhook reaches its view instead of a 404."""
    if "{" not in caminho:
        return caminho
    agendamento = helpers.criar_agendamento(tenant)
    webhook = Webhook.objects.create(tenant=tenant, url=WEBHOOK["url"], segredo="s")
    return caminho.format(agendamento_id=agendamento.pk, webhook_id=webhook.pk)


def corpo_valido(caminho: str) -> dict[str, Any]:
    if caminho.startswith("/relatorios/agendamentos"):
        return AGENDAMENTO
    if caminho.startswith("/relatorios/webhooks"):
        return WEBHOOK
    return PEDIDO


# Where the lone half sits, and the field the 400 names. json.dumps writes
# each as a `\udXXX` escape: valid JSON, but no character.
SURROGATES = [
    pytest.param({"nome": "Fechamento \ud800"}, "nome", id="alta-sozinha"),
    pytest.param({"nome": "\udc00 mensal"}, "nome", id="baixa-sozinha"),
    pytest.param({"nome": "\udc00\ud800"}, "nome", id="par-invertido"),
    pytest.param({"lojas": ["L1", "\udbff"]}, "lojas", id="dentro-de-lista"),
    pytest.param({"extra": {"a": {"b\udfff": 1}}}, "extra", id="chave-aninhada"),
    pytest.param({"in\ud800icio": "2026-01-01"}, "inicio", id="na-chave"),
]


def contagens() -> tuple[int, int, int]:
    return (
        RelatorioJob.objects.count(),
        Agendamento.objects.count(),
        Webhook.objects.count(),
    )


@pytest.mark.parametrize(("campos", "campo"), SURROGATES)
@pytest.mark.parametrize(("metodo", "caminho"), operacoes_de_escrita(com_corpo=True))
def test_surrogate_sozinho_em_qualquer_corpo_de_escrita_e_400_nomeando_o_campo(
    alvo: tuple[str, int],
    chave: str,
    tenant: Tenant,
    metodo: str,
    caminho: str,
    campos: dict[str, Any],
    campo: str,
) -> None:
    caminho = concreto(caminho, tenant)
    antes = contagens()
    corpo = json.dumps({**corpo_valido(caminho), **campos}).encode()
    codigo, resposta, texto = enviar(alvo, metodo, caminho, chave=chave, corpo=corpo)
    assert codigo == 400, texto[:300]
    erro = erro_json(resposta, texto)
    assert erro["campo"] == campo
    assert "UTF-16" in erro["erro"]
    assert contagens() == antes


@pytest.mark.parametrize(("metodo", "caminho"), operacoes_de_escrita(com_corpo=True))
def test_surrogate_como_o_corpo_inteiro_e_400(
    alvo: tuple[str, int], chave: str, tenant: Tenant, metodo: str, caminho: str
) -> None:
    codigo, resposta, texto = enviar(
        alvo, metodo, concreto(caminho, tenant), chave=chave, corpo=b'"\\ud800"'
    )
    assert codigo == 400, texto[:300]
    assert erro_json(resposta, texto)["campo"] == "corpo"


@pytest.mark.parametrize(("metodo", "caminho"), operacoes_de_escrita(com_corpo=False))
def test_operacao_sem_corpo_ignora_um_corpo_hostil(
    alvo: tuple[str, int], chave: str, tenant: Tenant, metodo: str, caminho: str
) -> None:
    # Pausing, resuming and deleting read no body: whatever is sent is not
    # parsed, so it can neither fail nor be stored.
    corpo = json.dumps({"nome": "\ud800", "x\u0000": ["\udc00"]}).encode()
    codigo, _, texto = enviar(
        alvo, metodo, concreto(caminho, tenant), chave=chave, corpo=corpo
    )
    assert codigo in (200, 204), texto[:300]


def test_par_utf16_completo_e_um_caractere_e_passa(
    alvo: tuple[str, int], chave: str, tenant: Tenant
) -> None:
    nome = "Fechamento \U0001f4ca"  # json.dumps writes it as \ud83d\udcca
    corpo = json.dumps({**AGENDAMENTO, "nome": nome}).encode()
    assert b"\\ud83d\\udcca" in corpo
    codigo, _, texto = enviar(
        alvo, "POST", "/relatorios/agendamentos", chave=chave, corpo=corpo
    )
    assert codigo == 201, texto[:300]
    assert Agendamento.objects.get(tenant=tenant).nome == nome


@pytest.mark.parametrize(
    ("consulta", "tipo"),
    [
        ("y=%5Cud800", "text/plain; charset=raw_unicode_escape"),
        ("y=%2B2AA-", "text/plain; charset=utf-7"),
        ("x=%FF&y=%00", None),
    ],
    ids=["raw-unicode-escape", "utf-7", "nul"],
)
def test_consulta_com_texto_impossivel_e_400_nomeando_o_parametro(
    alvo: tuple[str, int], chave: str, consulta: str, tipo: str | None
) -> None:
    # Django decodes a query string with the charset the Content-Type names,
    # even on a GET: some Python codecs make a lone surrogate out of ASCII.
    # The rule holds for every parameter, read by the view or not.
    cabecalhos = {"Content-Type": tipo} if tipo is not None else {}
    codigo, resposta, texto = enviar(
        alvo,
        "GET",
        f"/relatorios/jobs/1?{consulta}",
        chave=chave,
        cabecalhos=cabecalhos,
    )
    assert codigo == 400, texto[:300]
    assert erro_json(resposta, texto)["campo"] == "y"


# --- paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "caminho",
    [
        "/relatorios/jobs/0",
        "/relatorios/jobs/-1",
        "/relatorios/jobs/abc",
        "/relatorios/jobs/9223372036854775807",
        "/relatorios/jobs/9223372036854775808",
        "/relatorios/jobs/99999999999999999999",
        "/relatorios/jobs/999999999999999999999999999999",
        "/relatorios/jobs/1e9",
        "/relatorios/jobs/1/resultado.csv/x",
        "/relatorios/jobs/99999999999999999999/resultado.csv",
        "/relatorios/agendamentos/99999999999999999999",
        "/relatorios/agendamentos/0",
        "/relatorios/agendamentos/x",
        "/relatorios/",
        "/relatorios",
        "/relatorios/a/b/c/d",
        "/relatorios/%FF%FE",
        "/relatorios/jobs/%00",
        "/relatorios/..%2f..%2fetc%2fpasswd",
        "/relatorios/jobs/" + "a" * 3000,
        "/relatorios/jobs/1?x=%FF&y=%C3",
    ],
)
def test_caminho_desconhecido_ou_id_absurdo_e_404_json(
    alvo: tuple[str, int], chave: str, caminho: str
) -> None:
    codigo, resposta, texto = enviar(alvo, "GET", caminho, chave=chave)
    assert codigo == 404, texto[:300]
    assert erro_json(resposta, texto) == {"erro": "não encontrado"}


@pytest.mark.parametrize(
    "caminho", ["/relatorios/nao/existe", "/relatorios/jobs/abc", "/relatorios/"]
)
def test_404_da_api_e_json_mesmo_sem_token(alvo: tuple[str, int], caminho: str) -> None:
    codigo, resposta, texto = enviar(alvo, "GET", caminho)
    assert codigo == 404
    assert erro_json(resposta, texto) == {"erro": "não encontrado"}


def test_404_fora_da_api_continua_html(alvo: tuple[str, int]) -> None:
    codigo, resposta, texto = enviar(alvo, "GET", "/nao-existe/")
    assert codigo == 404
    assert resposta.getheader("Content-Type", "").startswith("text/html")
    assert "Página não encontrada" in texto.decode()


# --- methods -------------------------------------------------------------------

# Each API URL and the methods it answers (HEAD and OPTIONS come with them).
PERMITIDOS = {
    "/relatorios/vendas": {"POST", "OPTIONS"},
    "/relatorios/jobs/1": {"GET", "HEAD", "OPTIONS"},
    "/relatorios/jobs/1/": {"GET", "HEAD", "OPTIONS"},
    "/relatorios/jobs/1/resultado.csv": {"GET", "HEAD", "OPTIONS"},
    "/relatorios/agendamentos": {"GET", "HEAD", "POST", "OPTIONS"},
    "/relatorios/agendamentos/1": {"GET", "HEAD", "PATCH", "DELETE", "OPTIONS"},
    "/relatorios/agendamentos/1/pausar": {"POST", "OPTIONS"},
    "/relatorios/agendamentos/1/retomar": {"POST", "OPTIONS"},
    "/relatorios/alertas": {"GET", "HEAD", "OPTIONS"},
}
METODOS = ["GET", "POST", "PUT", "PATCH", "DELETE", "TRACE", "PROPFIND", "FOO"]


@pytest.mark.parametrize(
    ("caminho", "metodo"),
    [
        (caminho, metodo)
        for caminho, permitidos in PERMITIDOS.items()
        for metodo in METODOS
        if metodo not in permitidos
    ],
)
def test_metodo_nao_permitido_e_405_json_com_allow(
    alvo: tuple[str, int], chave: str, caminho: str, metodo: str
) -> None:
    codigo, resposta, texto = enviar(
        alvo, metodo, caminho, chave=chave, corpo=json.dumps(PEDIDO).encode()
    )
    assert codigo == 405, texto[:300]
    erro_json(resposta, texto)
    allow = {m.strip() for m in resposta.getheader("Allow", "").split(",")}
    assert allow == PERMITIDOS[caminho]


@pytest.mark.parametrize("caminho", sorted(PERMITIDOS))
def test_options_e_head_nunca_dao_5xx(
    alvo: tuple[str, int], chave: str, caminho: str
) -> None:
    codigos = [enviar(alvo, m, caminho, chave=chave)[0] for m in ("OPTIONS", "HEAD")]
    assert all(c < 500 for c in codigos), codigos


# --- the server's own errors ----------------------------------------------------


def test_erro_interno_na_api_e_500_json_sem_detalhes(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    def quebrar(**kwargs: Any) -> Any:
        raise RuntimeError("segredo interno")

    monkeypatch.setattr(consultas, "estado_do_job", quebrar)
    cliente = Client(
        raise_request_exception=False,
        HTTP_AUTHORIZATION=f"Token {helpers.criar_usuario(tenant)[1]}",
    )
    resposta = cliente.get("/relatorios/jobs/1")
    assert resposta.status_code == 500
    assert resposta.json() == {"erro": "erro interno do servidor"}
