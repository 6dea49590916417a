"""Plain helpers that create test data (no factory library)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from django.contrib.messages import get_messages
from django.test import Client
from rest_framework.authtoken.models import Token

from relatorios.agendamentos import agenda
from relatorios.models import (
    Agendamento,
    Loja,
    MovimentoEstoque,
    Produto,
    RelatorioJob,
    Tenant,
    Usuario,
    Venda,
    Vendedor,
)

_seq = itertools.count(1)
T = TypeVar("T")


def criar_tenant(nome: str | None = None, fuso: str = "America/Sao_Paulo") -> Tenant:
    return Tenant.objects.create(nome=nome or f"Rede {next(_seq)}", fuso_horario=fuso)


def criar_usuario(tenant: Tenant | None, **campos: Any) -> tuple[Usuario, str]:
    usuario = Usuario.objects.create_user(
        username=campos.pop("username", f"usuario{next(_seq)}"),
        password=campos.pop("password", "senha-de-teste-123"),
        tenant=tenant,
        **campos,
    )
    return usuario, Token.objects.create(user=usuario).key


def cliente_com_token(token: str) -> Client:
    return Client(headers={"Authorization": f"Token {token}"})


def criar_lojas(tenant: Tenant, *codigos: str) -> list[Loja]:
    return [
        Loja.objects.create(tenant=tenant, codigo=c, nome=f"Loja {c}") for c in codigos
    ]


def criar_vendedor(tenant: Tenant, taxa: str = "0.0300", nome: str = "") -> Vendedor:
    return Vendedor.objects.create(
        tenant=tenant,
        nome=nome or f"Vendedor {next(_seq)}",
        taxa_comissao=Decimal(taxa),
    )


def criar_produto(tenant: Tenant, preco: str = "10.00") -> Produto:
    n = next(_seq)
    return Produto.objects.create(
        tenant=tenant, sku=f"SKU{n:05d}", nome=f"Produto {n}", preco=Decimal(preco)
    )


def criar_venda(
    *,
    loja: Loja,
    vendedor: Vendedor,
    produto: Produto,
    data_hora: datetime,
    quantidade: int = 1,
    valor: str = "10.00",
) -> Venda:
    return Venda.objects.create(
        tenant=loja.tenant,
        loja=loja,
        vendedor=vendedor,
        produto=produto,
        data_hora=data_hora,
        quantidade=quantidade,
        valor=Decimal(valor),
    )


def criar_movimento(
    *, loja: Loja, produto: Produto, data: Any, quantidade: int
) -> MovimentoEstoque:
    return MovimentoEstoque.objects.create(
        tenant=loja.tenant, loja=loja, produto=produto, data=data, quantidade=quantidade
    )


def criar_agendamento(tenant: Tenant, **campos: Any) -> Agendamento:
    """A schedule through the service: the monthly close unless told otherwise."""
    padrao: dict[str, Any] = {
        "tipo": "vendas",
        "periodo": "mes_anterior",
        "cron": "0 3 1 * *",
        "prazo": timedelta(hours=3),
        "usuario_id": None,
    }
    return agenda.criar(tenant_id=tenant.pk, **(padrao | campos))


def mensagens(resposta: Any) -> list[str]:
    """The messages (django.contrib.messages) a test client's response left."""
    return [str(m) for m in get_messages(resposta.wsgi_request)]


def job(job_id: int) -> RelatorioJob:
    return RelatorioJob.objects.get(pk=job_id)


def esperar(
    condicao: Callable[[], T | None],
    *,
    timeout: float = 60,
    intervalo: float = 0.1,
    descricao: str = "condição",
) -> T:
    """Polls until `condicao` is truthy: a liveness bound, never a speed test."""
    limite = time.monotonic() + timeout
    while True:
        valor = condicao()
        if valor:
            return valor
        if time.monotonic() > limite:
            raise AssertionError(f"esperei {timeout}s por: {descricao}")
        time.sleep(intervalo)


def entregar_em_voo(max_rodadas: int = 100) -> list[str | None]:
    """Send what the tenants' delivery slots dispatched, as the cluster
    would, until nothing dispatched is left; each send frees its slot for the
    next waiting delivery (another tenant's first). Returns each send's outcome."""
    from django.db.models.functions import Now

    from relatorios.models import Entrega, EstadoEntrega
    from relatorios.notificacoes import entrega

    desfechos: list[str | None] = []
    for _ in range(max_rodadas):
        em_voo = list(
            Entrega.objects.filter(
                estado=EstadoEntrega.PENDENTE,
                enfileirada_em__isnull=False,
                proxima_em__lte=Now(),
            )
            .order_by("id")
            .values_list("id", flat=True)
        )
        if not em_voo:
            return desfechos
        desfechos += [entrega.entregar(entrega_id=i) for i in em_voo]
    raise AssertionError(f"deliveries still in flight after {max_rodadas} rounds")
