"""gunicorn settings, env-driven: `gunicorn config.wsgi -c config/gunicorn.py`."""

import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
worker_class = "gthread" if threads > 1 else "sync"
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-") or None
timeout = 30
graceful_timeout = 20
# gunicorn 27's control socket lives at one fixed path per user: two servers on
# one machine (tests, benchmarks, make run) would fight over it. Not used here.
control_socket_disable = True
