"""The admin in Portuguese as Brazilians write it: no label without its accent."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import label_for_field
from django.test import RequestFactory

from relatorios.models import Usuario

# Words of this domain that Portuguese writes with an accent; a label
# spelled without it ("Periodo", "ULTIMO STATUS") comes from a field name.
SEM_ACENTO = {
    "periodo": "período",
    "recuperacao": "recuperação",
    "destinatarios": "destinatários",
    "excluido": "excluído",
    "ultimo": "último",
    "ultima": "última",
    "proximo": "próximo",
    "proxima": "próxima",
    "versao": "versão",
    "situacao": "situação",
    "duracao": "duração",
    "descricao": "descrição",
    "codigo": "código",
    "preco": "preço",
    "comissao": "comissão",
    "ocorrencia": "ocorrência",
    "inicio": "início",
    "numero": "número",
    "usuario": "usuário",
    "dominios": "domínios",
    "notificacao": "notificação",
    "devolucao": "devolução",
    "conteudo": "conteúdo",
    "referencia": "referência",
    "saida": "saída",
    "automatico": "automático",
    "parametros": "parâmetros",
    "proprio": "próprio",
    "mes": "mês",
    "area": "área",
    "pagina": "página",
    "relatorio": "relatório",
    "relatorios": "relatórios",
    "horario": "horário",
    "fuso horario": "fuso horário",
    "ate": "até",
    "ja": "já",
    "nao": "não",
    "tambem": "também",
    "sera": "será",
    "disponivel": "disponível",
    "minimo": "mínimo",
    "maximo": "máximo",
    "vinculo": "vínculo",
    "termino": "término",
}
PALAVRA = re.compile(r"[a-zà-ú]+(?: [a-zà-ú]+)?")


def sem_acento(rotulo: str) -> list[str]:
    texto = rotulo.lower().replace("_", " ")
    palavras = re.findall(r"[a-zà-ú]+", texto)
    return [p for p in palavras if p in SEM_ACENTO]


def test_a_lista_pega_os_rotulos_da_issue() -> None:
    assert sem_acento("Periodo") == ["periodo"]
    assert sem_acento("ULTIMO STATUS") == ["ultimo"]
    assert sem_acento("período") == []


def test_nenhum_campo_tem_rotulo_sem_acento() -> None:
    erros = [
        f"{modelo.__name__}.{campo.name}: {campo.verbose_name!r} "
        f"({', '.join(SEM_ACENTO[p] for p in sem_acento(str(campo.verbose_name)))})"
        for modelo in apps.get_app_config("relatorios").get_models()
        for campo in modelo._meta.get_fields()
        if hasattr(campo, "verbose_name") and sem_acento(str(campo.verbose_name))
    ]
    assert not erros, "\n".join(erros)


def test_nenhum_modelo_tem_nome_sem_acento() -> None:
    erros = [
        f"{modelo.__name__}: {nome!r}"
        for modelo in apps.get_app_config("relatorios").get_models()
        for nome in (modelo._meta.verbose_name, modelo._meta.verbose_name_plural)
        if sem_acento(str(nome))
    ]
    assert not erros, "\n".join(erros)


def test_nenhuma_escolha_tem_rotulo_sem_acento() -> None:
    erros = [
        f"{modelo.__name__}.{campo.name}={valor}: {rotulo!r}"
        for modelo in apps.get_app_config("relatorios").get_models()
        for campo in modelo._meta.get_fields()
        for valor, rotulo in (getattr(campo, "choices", None) or [])
        if sem_acento(str(rotulo))
    ]
    assert not erros, "\n".join(erros)


@pytest.mark.django_db
def test_nenhuma_coluna_nem_filtro_do_admin_sem_acento() -> None:
    pedido = RequestFactory().get("/admin/")
    pedido.user = Usuario(is_superuser=True, is_staff=True)
    erros = []
    for modelo, model_admin in admin.site._registry.items():
        if modelo._meta.app_label != "relatorios":
            continue
        for coluna in model_admin.get_list_display(pedido):
            rotulo = label_for_field(coluna, modelo, model_admin)
            if sem_acento(str(rotulo)):
                erros.append(f"{modelo.__name__} coluna {coluna}: {rotulo!r}")
        for filtro in model_admin.get_list_filter(pedido):
            if isinstance(filtro, str):
                rotulo = label_for_field(filtro.split("__")[0], modelo, model_admin)
            else:
                rotulo = getattr(filtro, "title", "")
            if sem_acento(str(rotulo)):
                erros.append(f"{modelo.__name__} filtro {filtro}: {rotulo!r}")
    assert not erros, "\n".join(erros)
