"""`python -m config.proxy`: nginx with deploy/nginx/relatorios.conf, for
`make run` and the tests (production runs its own proxy with that file).

It writes a complete nginx.conf around the deployed server block in a
private folder, with the three addresses taken from PROXY_BIND (the
browser's origin, 127.0.0.1:8000), WEB_BIND (127.0.0.1:8002) and
EVENTOS_BIND (127.0.0.1:8001), and runs nginx in the foreground: Ctrl-C or
SIGTERM stop it, and the folder is removed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

MODELO = Path(__file__).resolve().parent.parent / "deploy" / "nginx" / "relatorios.conf"


def configuracao(*, proxy: str, web: str, eventos: str, pasta: Path) -> str:
    """The whole nginx.conf: the deployed block with these addresses."""
    bloco = MODELO.read_text()
    bloco = re.sub(r"listen [^;]+;", f"listen {proxy};", bloco, count=1)
    bloco = re.sub(
        r"(upstream relatorios_web \{\s*server )[^;]+;", rf"\g<1>{web};", bloco
    )
    bloco = re.sub(
        r"(upstream relatorios_eventos \{\s*server )[^;]+;", rf"\g<1>{eventos};", bloco
    )
    return f"""
daemon off;
worker_processes 1;
pid {pasta}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    client_body_temp_path {pasta}/corpo;
    proxy_temp_path {pasta}/proxy;
    fastcgi_temp_path {pasta}/fastcgi;
    uwsgi_temp_path {pasta}/uwsgi;
    scgi_temp_path {pasta}/scgi;
{bloco}
}}
"""


def main() -> int:
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if nginx is None:
        print(
            "nginx is missing: apt-get install nginx-light (the proxy that puts the"
            " pages and the event streams on one origin)",
            file=sys.stderr,
        )
        return 1
    pasta = Path(tempfile.mkdtemp(prefix="relatorios-proxy-"))
    # nginx's workers run as another user when started as root: they must
    # reach the folder where the master creates their temporary files.
    pasta.chmod(0o755)
    arquivo = pasta / "nginx.conf"
    arquivo.write_text(
        configuracao(
            proxy=os.environ.get("PROXY_BIND", "127.0.0.1:8000"),
            web=os.environ.get("WEB_BIND", "127.0.0.1:8002"),
            eventos=os.environ.get("EVENTOS_BIND", "127.0.0.1:8001"),
            pasta=pasta,
        )
    )
    # nginx runs as a child, not in this process's place, so that its
    # private folder is removed when it stops; Ctrl-C and SIGTERM are passed on.
    processo = subprocess.Popen([nginx, "-p", str(pasta), "-c", str(arquivo)])

    def repassar(sinal: int, _quadro: object) -> None:
        processo.send_signal(sinal)

    for sinal in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sinal, repassar)
    try:
        return processo.wait()
    finally:
        shutil.rmtree(pasta, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
