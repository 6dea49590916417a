"""Raw request parameters -> canonical parameters -> chave (seed 000).

Pure functions: no database, no settings. Normalizing removes the variations
that do not change a report (date formats, order and repetition of stores,
implicit defaults), so that the same request of the same tenant always falls
on the same row of relatorio_jobs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

CAMPOS = ("inicio", "fim", "agrupar", "lojas")
AGRUPAMENTOS = ("dia", "mes")
ANO_MIN, ANO_MAX = 1900, 2999
CODIGO_LOJA_MAX = 32

_DATA = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_DATA_HORA = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", re.ASCII)
_CONTROLE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class ErroDeParametro(Exception):
    """A request parameter that cannot be normalized; `campo` names it."""

    campo: str
    mensagem: str

    def __str__(self) -> str:
        return f"{self.campo}: {self.mensagem}"


def objeto_com(corpo: Any, campos: Collection[str]) -> Mapping[str, Any]:
    """`corpo` if it is a JSON object holding only these fields, else
    ErroDeParametro naming the first other one (or `corpo`). The API's every
    body goes through here: a misspelt field is refused, never ignored."""
    if not isinstance(corpo, Mapping):
        raise ErroDeParametro("corpo", "deve ser um objeto JSON")
    desconhecidos = sorted(str(c) for c in corpo if c not in campos)
    if desconhecidos:
        raise ErroDeParametro(
            desconhecidos[0], f"campo desconhecido: {', '.join(desconhecidos)}"
        )
    return corpo


def normalizar(
    brutos: Any, *, periodo_max_anos: int, usa_agrupar: bool = True
) -> dict[str, Any]:
    """Canonical form of a report request, or ErroDeParametro naming the field.

    Dates become `YYYY-MM-DD` (of an ISO datetime, its UTC date, as seed 000's
    `toISOString().slice(0, 10)`); `agrupar` is explicit; `lojas` is a sorted
    list of distinct strings, and absent means the same as `[]` (all stores).
    A type whose result does not depend on `agrupar` still validates it but
    leaves it out, so that requests differing only there share one job.
    """
    brutos = objeto_com(brutos, CAMPOS)

    inicio = _data(brutos, "inicio")
    fim = _data(brutos, "fim")
    if inicio > fim:
        raise ErroDeParametro("fim", "fim deve ser igual ou posterior a inicio")
    if fim >= _somar_anos(inicio, periodo_max_anos):
        raise ErroDeParametro(
            "fim", f"o período não pode passar de {periodo_max_anos} anos"
        )

    agrupar = brutos.get("agrupar")
    if agrupar is None:
        agrupar = "dia"
    if agrupar not in AGRUPAMENTOS:
        raise ErroDeParametro("agrupar", "deve ser 'dia' ou 'mes'")

    normalizados: dict[str, Any] = {
        "inicio": inicio.isoformat(),
        "fim": fim.isoformat(),
        "lojas": _lojas(brutos.get("lojas")),
    }
    if usa_agrupar:
        normalizados["agrupar"] = agrupar
    return normalizados


def chave(tenant_id: int, tipo: str, params: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of [tenant_id, tipo, params].

    The tenant is part of the key: without it two clients with the same filter
    would share a result, which is a data leak, not an optimization. Changing
    this function changes every key and silently splits deduplication; the
    golden test in tests/tipos/test_normalizacao.py pins it.
    """
    texto = json.dumps(
        [tenant_id, tipo, params],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(texto.encode("utf-8")).hexdigest()


def _data(brutos: Mapping[str, Any], campo: str) -> date:
    valor = brutos.get(campo)
    if valor is None:
        raise ErroDeParametro(campo, "campo obrigatório")
    if not isinstance(valor, str):
        raise ErroDeParametro(campo, "deve ser uma data no formato AAAA-MM-DD")
    texto = valor.strip()
    try:
        if _DATA.fullmatch(texto):
            resultado = date.fromisoformat(texto)
        elif _DATA_HORA.match(texto):
            momento = datetime.fromisoformat(texto)
            if momento.tzinfo is not None:
                momento = momento.astimezone(UTC)
            resultado = momento.date()
        else:
            raise ValueError(texto)
    except (ValueError, OverflowError):
        raise ErroDeParametro(
            campo, f"data inválida: {valor[:40]!r} (use AAAA-MM-DD)"
        ) from None
    if not ANO_MIN <= resultado.year <= ANO_MAX:
        raise ErroDeParametro(campo, f"ano fora do intervalo {ANO_MIN}-{ANO_MAX}")
    return resultado


def _lojas(valor: Any) -> list[str]:
    if valor is None:
        return []
    if not isinstance(valor, list):
        raise ErroDeParametro("lojas", "deve ser uma lista de códigos de loja")
    codigos: set[str] = set()
    for item in valor:
        # bool is an int in Python; a JSON true is not a store code.
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise ErroDeParametro("lojas", "cada código de loja deve ser texto")
        codigo = str(item).strip()
        if not codigo or len(codigo) > CODIGO_LOJA_MAX or _CONTROLE.search(codigo):
            raise ErroDeParametro("lojas", f"código de loja inválido: {codigo[:40]!r}")
        codigos.add(codigo)
    return sorted(codigos)


def _somar_anos(d: date, anos: int) -> date:
    try:
        return d.replace(year=d.year + anos)
    except ValueError:  # 29 February into a non-leap year
        return d.replace(year=d.year + anos, day=28)
