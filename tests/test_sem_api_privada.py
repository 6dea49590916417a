from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

RAIZ = Path(__file__).resolve().parent.parent
NOSSOS = {"relatorios", "config", "tests", "bench"}
# Underscored names that their owners document as public API: Django's model
# `_meta` API and its managers, and namedtuple's methods.
DOCUMENTADOS = {
    "_meta",
    "_default_manager",
    "_base_manager",
    "_state",
    "_replace",
    "_asdict",
    "_fields",
    "_make",
}


def _importacoes_privadas(arquivo: Path) -> list[str]:
    achadas = []
    for no in ast.walk(ast.parse(arquivo.read_text(), str(arquivo))):
        if isinstance(no, ast.ImportFrom) and no.module and no.level == 0:
            partes = no.module.split(".")
            if partes[0] in NOSSOS:
                continue
            modulos = [p for p in partes if p.startswith("_") and p != "__future__"]
            nomes = [a.name for a in no.names if a.name.startswith("_")]
            if modulos or nomes:
                achadas.append(f"{arquivo.relative_to(RAIZ)}:{no.lineno} {no.module}")
        elif isinstance(no, ast.Import):
            for alias in no.names:
                partes = alias.name.split(".")
                if partes[0] not in NOSSOS and any(p.startswith("_") for p in partes):
                    achadas.append(
                        f"{arquivo.relative_to(RAIZ)}:{no.lineno} {alias.name}"
                    )
    return achadas


# Overrides and self._x: which class a name belongs to needs the classes
# themselves, so the module is imported and each class's bases are walked.


def _privado(nome: str) -> bool:
    # `__x` (not dunder) is mangled per class: it cannot collide.
    return (
        nome.startswith("_") and not nome.startswith("__") and nome not in DOCUMENTADOS
    )


def _de_dependencia(classe: type) -> bool:
    """A class of an installed package or of the standard library, not ours.
    Classes built into the interpreter (object, int, ...) have no private
    attributes written in Python to collide with."""
    if classe.__module__.split(".")[0] in NOSSOS:
        return False
    try:
        inspect.getfile(classe)
    except (TypeError, OSError):
        return False
    return True


@functools.cache
def _nomes_privados_de(classe: type) -> frozenset[str]:
    """The private names a dependency's class defines: in its body, and as
    `self._x = ...` in its methods (instance attributes)."""
    nomes = {n for n in vars(classe) if _privado(n)}
    try:
        fonte = textwrap.dedent(inspect.getsource(classe))
        arvore = ast.parse(fonte)
    except (OSError, TypeError, SyntaxError):
        return frozenset(nomes)
    for no in ast.walk(arvore):
        if (
            isinstance(no, ast.Attribute)
            and isinstance(no.ctx, ast.Store)
            and isinstance(no.value, ast.Name)
            and no.value.id == "self"
            and _privado(no.attr)
        ):
            nomes.add(no.attr)
    return frozenset(nomes)


def _dono_privado(bases: list[type], nome: str) -> type | None:
    """The first dependency's class in the bases' MROs that defines `nome`."""
    for base in bases:
        for classe in base.__mro__:
            if _de_dependencia(classe) and nome in _nomes_privados_de(classe):
                return classe
    return None


def _nomes_importados(arvore: ast.AST) -> dict[str, ast.Import | ast.ImportFrom]:
    """Names bound by any import in the file, also inside functions."""
    nomes: dict[str, ast.Import | ast.ImportFrom] = {}
    for no in ast.walk(arvore):
        if isinstance(no, ast.Import | ast.ImportFrom):
            for alias in no.names:
                nome = alias.asname or alias.name.split(".")[0]
                nomes.setdefault(nome, no)
    return nomes


def _resolver(
    expr: ast.expr,
    globais: dict[str, Any],
    importados: dict[str, ast.Import | ast.ImportFrom],
) -> Any:
    if isinstance(expr, ast.Subscript):  # Generic[T], Form[Model]
        return _resolver(expr.value, globais, importados)
    if isinstance(expr, ast.Name):
        if expr.id in globais:
            return globais[expr.id]
        if hasattr(builtins, expr.id):
            return getattr(builtins, expr.id)
        no = importados.get(expr.id)
        if isinstance(no, ast.ImportFrom) and no.module and no.level == 0:
            for alias in no.names:
                if (alias.asname or alias.name) == expr.id:
                    modulo = importlib.import_module(no.module)
                    if hasattr(modulo, alias.name):
                        return getattr(modulo, alias.name)
                    return importlib.import_module(f"{no.module}.{alias.name}")
        if isinstance(no, ast.Import):
            return importlib.import_module(expr.id)
        raise LookupError(expr.id)
    if isinstance(expr, ast.Attribute):
        dono = _resolver(expr.value, globais, importados)
        if isinstance(dono, ModuleType) and not hasattr(dono, expr.attr):
            return importlib.import_module(f"{dono.__name__}.{expr.attr}")
        return getattr(dono, expr.attr)
    if isinstance(expr, ast.Call) and not expr.args and not expr.keywords:
        # A factory of classes (schemathesis' `as_state_machine()`).
        return _resolver(expr.func, globais, importados)()
    raise LookupError(ast.unparse(expr))


def _acesso_privado(no: ast.AST) -> str | None:
    """`_x` in `self._x`, `cls._x` or `super()._x`, else None."""
    if not isinstance(no, ast.Attribute) or not _privado(no.attr):
        return None
    alvo = no.value
    if isinstance(alvo, ast.Name) and alvo.id in {"self", "cls"}:
        return no.attr
    if (
        isinstance(alvo, ast.Call)
        and isinstance(alvo.func, ast.Name)
        and alvo.func.id == "super"
    ):
        return no.attr
    return None


def _no_corpo_da_classe(classe: ast.ClassDef) -> list[ast.AST]:
    """The nodes of the class's own methods, not of classes nested in it."""
    nos: list[ast.AST] = []
    pendentes: list[ast.AST] = list(classe.body)
    while pendentes:
        no = pendentes.pop()
        if isinstance(no, ast.ClassDef):
            continue
        nos.append(no)
        pendentes.extend(ast.iter_child_nodes(no))
    return nos


def _usos_privados(fonte: str, nome: str, globais: dict[str, Any]) -> list[str]:
    """Overrides of, and self/cls/super() uses of, a dependency's private names
    in the classes of one module (`globais`: the imported module's namespace)."""
    arvore = ast.parse(fonte, nome)
    importados = _nomes_importados(arvore)
    locais: dict[str, list[type]] = {}
    achadas = []
    for classe in ast.walk(arvore):
        if not isinstance(classe, ast.ClassDef):
            continue
        bases: list[type] = []
        objeto = globais.get(classe.name)
        if (
            isinstance(objeto, type)
            and objeto.__module__ == globais.get("__name__")
            and objeto.__qualname__ == classe.name
        ):
            # A module-level class: its bases as Python built them (a base
            # can be any expression, a call included).
            classe.bases = []
            bases = list(objeto.__bases__)
        try:
            for expr in classe.bases:
                if isinstance(expr, ast.Name) and expr.id in locais:
                    bases.extend(locais[expr.id])
                    continue
                base = _resolver(expr, globais, importados)
                if isinstance(base, type):
                    bases.append(base)
        except (LookupError, AttributeError, ImportError) as erro:
            achadas.append(f"{nome}:{classe.lineno} {classe.name}: base? {erro!r}")
            continue
        definidos: list[tuple[int, str]] = []
        for item in classe.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                definidos.append((item.lineno, item.name))
            elif isinstance(item, ast.Assign):
                definidos.extend(
                    (item.lineno, t.id) for t in item.targets if isinstance(t, ast.Name)
                )
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                definidos.append((item.lineno, item.target.id))
        for linha, definido in definidos:
            dono = _privado(definido) and _dono_privado(bases, definido)
            if dono:
                achadas.append(
                    f"{nome}:{linha} {classe.name}.{definido} sobrescreve "
                    f"{dono.__module__}.{dono.__qualname__}.{definido}"
                )
        for no in _no_corpo_da_classe(classe):
            usado = _acesso_privado(no)
            dono = usado and _dono_privado(bases, usado)
            if dono:
                achadas.append(
                    f"{nome}:{no.lineno} {classe.name} usa {ast.unparse(no)} de "
                    f"{dono.__module__}.{dono.__qualname__}"
                )
        if classe.name not in globais:
            # A class inside a function: its subclasses there see its bases.
            locais[classe.name] = bases
    return sorted(set(achadas))


def _sobrescritas_e_usos(arquivo: Path) -> list[str]:
    relativo = arquivo.relative_to(RAIZ)
    modulo = importlib.import_module(".".join(relativo.with_suffix("").parts))
    return _usos_privados(arquivo.read_text(), str(relativo), vars(modulo))


def _fontes(*pastas: str) -> list[Path]:
    return sorted(
        p
        for pasta in pastas
        for p in (RAIZ / pasta).rglob("*.py")
        if "migrations" not in p.parts
    )


def test_ha_fontes_para_verificar() -> None:
    assert len(_fontes("relatorios", "config")) > 50


@pytest.mark.parametrize(
    "arquivo",
    _fontes("relatorios", "config", "tests", "bench"),
    ids=lambda p: str(p.relative_to(RAIZ)),
)
def test_nenhum_modulo_importa_nome_privado_de_dependencia(arquivo: Path) -> None:
    assert _importacoes_privadas(arquivo) == []


@pytest.mark.parametrize(
    "arquivo",
    _fontes("relatorios", "config", "tests", "bench"),
    ids=lambda p: str(p.relative_to(RAIZ)),
)
def test_nenhuma_classe_sobrescreve_ou_usa_nome_privado_de_dependencia(
    arquivo: Path,
) -> None:
    assert _sobrescritas_e_usos(arquivo) == []


def test_a_verificacao_acha_um_nome_privado() -> None:
    exemplo = RAIZ / "relatorios" / "_exemplo_de_teste.py"
    exemplo.write_text("from prometheus_client.exposition import _SilentHandler\n")
    try:
        assert _importacoes_privadas(exemplo) == [
            "relatorios/_exemplo_de_teste.py:1 prometheus_client.exposition"
        ]
    finally:
        exemplo.unlink()


EXEMPLO = """
from django import forms
from rest_framework import serializers


class Formulario(forms.Form):
    def _post_clean(self):
        super()._post_clean()

    def clean(self):
        return self._errors

    def _nosso(self):
        self._proprio = 1
        return self._proprio


class Saida(serializers.Serializer):
    @property
    def _readable_fields(self):
        return []


def fabrica():
    class Local(serializers.Serializer):
        pass

    class Filha(Local):
        def validate(self, dados):
            return self._validated_data
"""


def test_a_verificacao_acha_sobrescritas_e_usos_de_nomes_privados() -> None:
    assert _usos_privados(EXEMPLO, "exemplo.py", {}) == [
        "exemplo.py:11 Formulario usa self._errors de django.forms.forms.BaseForm",
        "exemplo.py:20 Saida._readable_fields sobrescreve "
        "rest_framework.serializers.Serializer._readable_fields",
        "exemplo.py:30 Filha usa self._validated_data de "
        "rest_framework.serializers.BaseSerializer",
        "exemplo.py:7 Formulario._post_clean sobrescreve "
        "django.forms.forms.BaseForm._post_clean",
        "exemplo.py:8 Formulario usa super()._post_clean de "
        "django.forms.forms.BaseForm",
    ]
