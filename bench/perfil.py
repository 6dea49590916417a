"""Summarizes py-spy's collapsed stacks: `python -m bench.perfil FILE... [-n 30]`.

Prints, in % of all samples, the functions with the most inclusive time
(anywhere on the stack) and the most self time (on top of the stack), and
the share of a few groups of frames that tell where a request's time goes
(DRF, authentication, the database driver, the service code, ...).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# (label, regex on one frame "function (file:line)"); a sample belongs to a
# group when any of its frames matches.
GRUPOS: list[tuple[str, str]] = [
    ("granian (WSGI glue, config/vigia.py)", r"granian/|config/vigia\.py"),
    ("django request handling", r"django/core/handlers/"),
    ("middleware (all)", r"django/(middleware|contrib/(sessions|messages|auth))/"),
    ("DRF APIView.dispatch", r"dispatch \(rest_framework/views\.py"),
    ("DRF authentication", r"rest_framework/authentication\.py|autenticacao\.py"),
    ("DRF request.data (parse)", r"_load_data_and_files|rest_framework/parsers\.py"),
    ("DRF serializers", r"rest_framework/(serializers|fields)\.py"),
    ("DRF render (JSON)", r"rest_framework/renderers\.py"),
    ("relatorios.jobs (submit, claim)", r"relatorios/jobs/(pedidos|ciclo|vagas)\.py"),
    ("relatorios.jobs.consultas", r"relatorios/jobs/consultas\.py"),
    ("normalizacao", r"relatorios/tipos/normalizacao\.py"),
    ("django_q async_task", r"django_q/tasks\.py"),
    ("django ORM (query build+compile)", r"django/db/models/"),
    ("db cursor execute (all)", r"django/db/backends/utils\.py"),
    ("psycopg (driver)", r"psycopg/"),
    ("db connection health check", r"is_usable|close_if_health_check_failed"),
    ("signals (request_started/finished)", r"django/dispatch/"),
    ("logging", r"logging/__init__\.py"),
]


def ler(arquivos: list[Path]) -> Counter[str]:
    pilhas: Counter[str] = Counter()
    for arquivo in arquivos:
        for linha in arquivo.read_text(errors="replace").splitlines():
            pilha, _, n = linha.rpartition(" ")
            if pilha and n.isdigit():
                pilhas[pilha] += int(n)
    return pilhas


def resumir(pilhas: Counter[str], n: int) -> str:
    total = sum(pilhas.values()) or 1
    inclusivo: Counter[str] = Counter()
    proprio: Counter[str] = Counter()
    grupos: Counter[str] = Counter()
    compilados = [(nome, re.compile(rx)) for nome, rx in GRUPOS]
    for pilha, amostras in pilhas.items():
        quadros = pilha.split(";")
        for quadro in set(quadros):
            inclusivo[_curto(quadro)] += amostras
        proprio[_curto(quadros[-1])] += amostras
        for nome, rx in compilados:
            if any(rx.search(q) for q in quadros):
                grupos[nome] += amostras
    saida = [f"{total} samples"]
    saida.append("\n-- groups (inclusive) --")
    for nome, _ in GRUPOS:
        saida.append(f"{100 * grupos[nome] / total:5.1f}%  {nome}")
    saida.append("\n-- top inclusive --")
    for quadro, amostras in inclusivo.most_common(n):
        saida.append(f"{100 * amostras / total:5.1f}%  {quadro}")
    saida.append("\n-- top self --")
    for quadro, amostras in proprio.most_common(n):
        saida.append(f"{100 * amostras / total:5.1f}%  {quadro}")
    return "\n".join(saida)


def _curto(quadro: str) -> str:
    # "func (/long/path/site-packages/pkg/mod.py:12)" -> "func (pkg/mod.py)"
    return re.sub(
        r"\((?:.*/site-packages/|.*/wt-[^/]+/|/)?([^:]*):\d+\)", r"(\1)", quadro
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("arquivos", nargs="+", type=Path)
    p.add_argument("-n", type=int, default=30)
    args = p.parse_args()
    print(resumir(ler(args.arquivos), args.n))


if __name__ == "__main__":
    main()
