"""The benchmark suite of issue 5: `make bench` (see docs/benchmarks.md).

Everything here is tooling: it creates its own database, starts its own
web server, qcluster and wrk processes, prints one line per figure and cleans up.
Nothing in relatorios/ imports it.
"""
