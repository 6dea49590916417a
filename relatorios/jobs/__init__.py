"""The job lifecycle: the only code that changes relatorio_jobs.

Views, admin actions, tasks and commands call these modules; none of them
saves a job itself. Every transition is a guarded UPDATE that reports whether
it won; every write a worker makes is fenced by its attempt
(`ciclo.Tentativa`), so a worker that lost its job can never overwrite the
row. `pedidos` takes requests, `ciclo` is the worker's side, `vagas` the
tenant's slots, `varredura` what a crash left behind, `suporte` support's
actions; `consultas` reads, `execucao` runs a report, `retencao` forgets.
"""
