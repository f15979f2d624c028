"""A throwaway PostgreSQL server from the local binaries (initdb, pg_ctl), with durability off
because it is thrown away: for the tests (tests/conftest.py's fixtures) and the benchmarks."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Optional



def pg_bindir() -> Optional[Path]:
    """Where initdb and pg_ctl live: PATH first, then Debian's /usr/lib/postgresql/<major>/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent

    def major(p: Path) -> int:
        name = p.parent.parent.name
        return int(name.split(".")[0]) if name.split(".")[0].isdigit() else 0

    for initdb in sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=major, reverse=True):
        if (initdb.parent / "pg_ctl").exists():
            return initdb.parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(cmd: list[str]) -> list[str]:
    # initdb refuses to run as root; the server files must belong to an unprivileged user.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str], what: str, log: Path) -> None:
    done = subprocess.run(_as_postgres(cmd), capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}\n{tail}")


def start_server(bindir: Path) -> tuple[str, Callable[[], None]]:
    datadir = Path(tempfile.mkdtemp(prefix="cuco-pg-"))
    if os.geteuid() == 0:
        pg = pwd.getpwnam("postgres")
        os.chown(datadir, pg.pw_uid, pg.pw_gid)
    log, port = datadir / "server.log", _free_port()
    _run([str(bindir / "initdb"), "-D", str(datadir), "-A", "trust", "-U", "postgres", "-E", "UTF8",
          "--locale=C", "--no-sync"], "initdb", log)
    opts = (f"-p {port} -k {datadir} -c listen_addresses=127.0.0.1 -F "
            "-c full_page_writes=off -c synchronous_commit=off")
    # -l: the server must not inherit our pipes, or subprocess.run would wait for it forever.
    pg_ctl = str(bindir / "pg_ctl")
    _run([pg_ctl, "-D", str(datadir), "-o", opts, "-l", str(log), "-w", "start"], "pg_ctl start", log)

    def stop() -> None:
        subprocess.run(_as_postgres([pg_ctl, "-D", str(datadir), "-m", "immediate", "-w", "stop"]),
                       capture_output=True, timeout=60)
        shutil.rmtree(datadir, ignore_errors=True)

    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", stop


def admin_exec(admin_url: str, sql: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(admin_url)
    with psycopg.connect(host=u.host, port=u.port or 5432, user=u.username, password=u.password,
                         dbname=u.database or "postgres", autocommit=True) as conn:
        conn.execute(sql)
