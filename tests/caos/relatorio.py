"""What a run prints: the calm phase against the faulty one, the faults, the
invariants; and the same as JSON (relatorio.json) for the CI test."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tests.caos.carga import FluxoDoSoak
from tests.caos.falhas import Registro
from tests.caos.invariantes import Colheita, Figura


def nota(texto: str) -> None:
    print(f"# {texto}", flush=True)


def percentil(valores: list[float], p: float) -> float:
    if not valores:
        return math.nan
    ordenados = sorted(valores)
    return ordenados[min(len(ordenados) - 1, int(p * len(ordenados)))]


def fase(c: Colheita, nome: str, de: float, ate: float) -> dict[str, Any]:
    """Throughput and latency of one phase, from the clients and the database."""
    chamadas = [ch for ch in c.soak.chamadas if de <= ch.inicio < ate]
    duracao = max(ate - de, 1e-9)
    submits = [ch for ch in chamadas if ch.carga == "submeter"]
    aceitos = [ch for ch in submits if ch.status in (200, 202)]
    respondidas = [
        (ch.fim - ch.inicio) * 1000
        for ch in chamadas
        if ch.carga in ("submeter", "consultar") and ch.status is not None
    ]
    [(prontos,)] = c.linhas(
        "SELECT count(*) FROM relatorio_tentativas WHERE desfecho = 'pronto'"
        " AND terminado_em >= to_timestamp(%s) AND terminado_em < to_timestamp(%s)",
        [de, ate],
    )
    return {
        "fase": nome,
        "segundos": round(duracao, 1),
        "pedidos_s": round(len(chamadas) / duracao, 1),
        "submits_aceitos_s": round(len(aceitos) / duracao, 2),
        "jobs_prontos_s": round(prontos / duracao, 2),
        "p50_ms": round(percentil(respondidas, 0.5), 1),
        "p99_ms": round(percentil(respondidas, 0.99), 1),
        "http_5xx": sum(1 for ch in chamadas if (ch.status or 0) >= 500),
        "sem_resposta": sum(1 for ch in chamadas if ch.status is None),
        "status": dict(Counter(str(ch.status) for ch in chamadas)),
    }


def disparo(c: Colheita) -> dict[str, Any]:
    """How late the schedules fired: from the planned instant to when a
    sample first saw the occurrence fired (an upper bound of its commit)."""
    linhas = c.linhas(
        "SELECT id, extract(epoch FROM planejado_para)::float, estado"
        " FROM relatorio_ocorrencias"
    )
    atrasos = [
        c.amostras.disparadas[i] - planejado
        for i, planejado, estado in linhas
        if estado == "disparada" and i in c.amostras.disparadas
    ]
    estados = Counter(estado for _, _, estado in linhas)
    return {
        "ocorrencias": dict(estados),
        "atraso_p50_s": round(percentil(atrasos, 0.5), 2),
        "atraso_p99_s": round(percentil(atrasos, 0.99), 2),
        "atraso_max_s": round(max(atrasos, default=math.nan), 2),
    }


def imprimir_disparo(d: dict[str, Any]) -> None:
    estados = ", ".join(f"{n} {e}" for e, n in sorted(d["ocorrencias"].items()))
    print(
        f"disparos: {estados}; atraso até ser visto disparado p50"
        f" {d['atraso_p50_s']} s, p99 {d['atraso_p99_s']} s, máx {d['atraso_max_s']} s"
    )


ESPERA = re.compile(
    r"\] (\S*) LOG:  process \d+ (?:acquired|still waiting for) .* after ([\d.]+) ms"
)


def esperas(c: Colheita) -> dict[str, dict[str, float]]:
    """Lock waits over a second on the primary (log_lock_waits), by who
    waited: a frozen process inside a transaction holds its locks as long as
    it stays frozen. Only with the private primary (its log is ours)."""
    if c.impl.pasta_pg is None:
        return {}
    por_quem: dict[str, list[float]] = {}
    log = c.impl.pasta_pg / "primario.log"
    for linha in log.read_text(errors="replace").splitlines():
        casada = ESPERA.search(linha)
        if casada:
            quem = re.sub(r"-\d+$", "", casada.group(1) or "?")
            por_quem.setdefault(quem, []).append(float(casada.group(2)) / 1000)
    return {
        quem: {"esperas": len(s), "max_s": round(max(s), 1)}
        for quem, s in sorted(por_quem.items())
    }


def imprimir_esperas(e: dict[str, dict[str, float]]) -> None:
    if e:
        partes = [f"{q} {v['esperas']:g} (máx {v['max_s']} s)" for q, v in e.items()]
        print(f"esperas por trava > 1 s: {', '.join(partes)}")


def imprimir_fases(fases: list[dict[str, Any]]) -> None:
    print(
        f"{'fase':<6} {'s':>5} {'req/s':>6} {'aceitos/s':>9} {'prontos/s':>9}"
        f" {'p50 ms':>7} {'p99 ms':>7} {'5xx':>4} {'sem resp.':>9}"
    )
    for f in fases:
        print(
            f"{f['fase']:<6} {f['segundos']:>5.0f} {f['pedidos_s']:>6.1f}"
            f" {f['submits_aceitos_s']:>9.2f} {f['jobs_prontos_s']:>9.2f}"
            f" {f['p50_ms']:>7.1f} {f['p99_ms']:>7.1f} {f['http_5xx']:>4}"
            f" {f['sem_resposta']:>9}"
        )
    if len(fases) == 2 and fases[0]["jobs_prontos_s"]:
        calma, caos = fases
        prontos = caos["jobs_prontos_s"] / calma["jobs_prontos_s"]
        p99 = caos["p99_ms"] / max(calma["p99_ms"], 1e-9)
        print(f"caos/calma: prontos/s x{prontos:.2f}, p99 x{p99:.2f}")


def imprimir_falhas(registros: list[Registro]) -> None:
    feitas = Counter(r.tipo for r in registros if not r.pulada)
    puladas = Counter(r.tipo for r in registros if r.pulada)
    total = sum(feitas.values())
    print(f"falhas injetadas: {total} ({sum(puladas.values())} sem alvo, puladas)")
    for tipo in sorted(feitas.keys() | puladas.keys()):
        extra = f" (+{puladas[tipo]} puladas)" if puladas[tipo] else ""
        print(f"  {tipo:<24} {feitas[tipo]:>4}{extra}")


def imprimir_figuras(figuras: list[Figura]) -> None:
    for f in figuras:
        valor = "—" if f.valor is None else str(f.valor)
        rotulo = " (informativo)" if f.informativo else ""
        print(f"{f.nome:<38} {valor:>5}  {f.prova}{rotulo}")
        for exemplo in f.exemplos:
            print(f"{'':<46}· {exemplo}")


def violadas(figuras: list[Figura]) -> list[Figura]:
    return [f for f in figuras if not f.informativo and f.valor]


def gravar(
    arquivo: Path,
    *,
    cabecalho: dict[str, Any],
    fases: list[dict[str, Any]],
    registros: list[Registro],
    figuras: list[Figura],
    erros: list[str],
    rss: dict[str, list[tuple[float, float]]],
    disparos: dict[str, Any],
    travas: dict[str, dict[str, float]],
) -> None:
    arquivo.write_text(
        json.dumps(
            {
                **cabecalho,
                "fases": fases,
                "disparos": disparos,
                "esperas_por_trava": travas,
                "falhas": [asdict(r) for r in registros],
                "falhas_injetadas": sum(1 for r in registros if not r.pulada),
                "invariantes": [asdict(f) for f in figuras],
                "erros_do_harness": erros,
                # Each process's RSS (MB) by seconds since the load started.
                "rss": rss,
            },
            ensure_ascii=False,
            indent=1,
        )
    )


def gravar_fluxos(arquivo: Path, fluxos: list[FluxoDoSoak]) -> None:
    """Every live-events stream the listener held, with what it read: the
    evidence behind the SSE figures."""
    with arquivo.open("w") as saida:
        for f in fluxos:
            lido = f.fluxo
            linha = {
                "tenant": f.tenant,
                "aberto": f.aberto,
                "respondido": f.respondido,
                "fechado": f.fechado,
                "retomado_de": f.retomado_de,
                "status": lido.status if lido is not None else None,
                "eventos": [
                    [e.id, e.tipo, e.dados] for e in (lido.eventos if lido else [])
                ],
            }
            saida.write(json.dumps(linha, ensure_ascii=False) + "\n")
