"""Live events: what the database publishes, and how a process fans it out.

The database publishes (migrations 0027, 0030): every change of a job's
status or progress, every alert opened or closed and every scheduled report
delivered is a row of relatorio_eventos, written at the commit of the change
with an id from a sequence (no lock: overlapping commits may show out of id
order).

Here: `central` holds a process's one connection reading that table and
hands each event to the streams that want it, in id order as `ordem` allows
(it waits, boundedly, for an id still committing); `leitura` reads the table
(a stream's start, a resume after Last-Event-ID, a catch-up) and drops what
is past its retention. The streams themselves, with their
authentication and shapes, are the API's (relatorios/api/eventos.py).
"""
