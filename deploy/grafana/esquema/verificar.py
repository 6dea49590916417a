"""Check deploy/grafana/relatorios.json against Grafana's dashboard schema.

No Grafana server can be installed here (none in Debian, PyPI or npm), so
the dashboard is checked against the schema Grafana publishes on npm,
`@grafana/schema`: the TypeScript types generated from its dashboard kind
and from each panel plugin's options. The JSON is written into a TypeScript
file as object literals that must `satisfies` those types, and `tsc` says
where it does not: an unknown field, a field of the wrong type, an option a
panel does not have. Run by `make grafana-esquema`.

`__inputs` is the import wrapper Grafana's export adds (the data source
asked for on import), not part of the dashboard model: it is left out.
Panel options are checked as partial: Grafana fills in the defaults.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

AQUI = Path(__file__).resolve().parent
PAINEL = AQUI.parent / "relatorios.json"
TIPOS = "@grafana/schema/dist/types/raw"
PLUGINS = {"timeseries": "TimeSeries", "stat": "Stat"}


def gerar(painel: dict[str, Any]) -> str:
    painel = {k: v for k, v in painel.items() if k not in ("__inputs", "__requires")}
    linhas = [
        f'import type {{ Dashboard }} from "{TIPOS}/dashboard/x/types.gen";',
        *(
            f'import type * as {nome} from "{TIPOS}/composable/{tipo}'
            '/panelcfg/x/types.gen";'
            for tipo, nome in PLUGINS.items()
        ),
        "type Parcial<T> = T extends Array<infer U> ? Array<Parcial<U>>"
        " : T extends object ? { [K in keyof T]?: Parcial<T[K]> } : T;",
        f"export const painel = {json.dumps(painel, ensure_ascii=False)}"
        " satisfies Dashboard;",
    ]
    for p in painel["panels"]:
        if p["type"] not in PLUGINS:
            sys.exit(f"painel {p['id']}: tipo {p['type']} sem esquema aqui")
        nome = PLUGINS[p["type"]]
        opcoes = json.dumps(p.get("options", {}), ensure_ascii=False)
        linhas.append(
            f"export const opcoes_{p['id']} = {opcoes}"
            f" satisfies Parcial<{nome}.Options>;"
        )
        custom = p.get("fieldConfig", {}).get("defaults", {}).get("custom")
        if custom is not None:
            linhas.append(
                f"export const campos_{p['id']} = {json.dumps(custom)}"
                f" satisfies Parcial<{nome}.FieldConfig>;"
            )
    return "\n".join(linhas) + "\n"


if __name__ == "__main__":
    (AQUI / "painel.gen.ts").write_text(gerar(json.loads(PAINEL.read_text())))
