"""`make caos`: the soak that proves the guarantees together (issue 31).

A deployment of its own (a private PostgreSQL primary and streaming
replica, 2 web servers, 3 qclusters, an SMTP server, a webhook endpoint that
answers 500 a fifth of the time), a mixed load over HTTP, a fault injector
whose plan is drawn from a seed, and invariants checked at the end, each a
figure whose target is 0. docs/caos.md says what each proves.

- `parametros.py`: a run's options and the deployment's knobs;
- `implantacao.py`: the database, the data, the processes, who is who;
- `receptores.py`: the SMTP server and the webhook endpoint;
- `razao.py`: the report type that keeps the side-effect ledger;
- `carga.py`: the load drivers (registry `CARGAS`);
- `falhas.py`: the plan and the injector (registry `FALHAS`);
- `amostras.py`: running jobs per tenant and RSS, sampled;
- `invariantes.py`: the checks (registry `INVARIANTES`);
- `relatorio.py`, `soak.py`, `__main__.py`: the run and what it prints;
- `test_caos.py`: the CI form (60 s, fixed seed) and the harness's own tests.
"""
