"""Live events: what the database publishes, and how a process fans it out.

The database publishes (migration 0019): every change of a job's status or
progress, every alert opened or closed and every scheduled report delivered
is a row of relatorio_eventos and a NOTIFY on `relatorios_eventos`, both at
the commit of the change, numbered in commit order.

Here: `central` holds a process's one LISTEN connection and hands each event
to the streams that want it; `leitura` reads the table (a stream's start, a
resume after Last-Event-ID, a catch-up after the LISTEN connection was lost)
and drops what is past its retention. The streams themselves, with their
authentication and shapes, are the API's (relatorios/api/eventos.py).
"""
