"""Fixtures: the same store tests run against a SQLite file and a throwaway PostgreSQL.

The PostgreSQL server is started once per session from the local binaries (initdb, pg_ctl),
with durability off because it is thrown away, and is always stopped by a finalizer. Set
CUCO_TEST_POSTGRES_URL (e.g. postgresql://postgres@127.0.0.1:5432/postgres) to use an existing
server instead. Each test gets its own database on the server.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest

PG_ENV = "CUCO_TEST_POSTGRES_URL"


def _pg_bindir() -> Optional[Path]:
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
        pytest.fail(f"{what} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}\n{tail}")


def _start_server(bindir: Path) -> tuple[str, Callable[[], None]]:
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


@pytest.fixture(scope="session")
def pg_server(request: pytest.FixtureRequest) -> str:
    """Admin URL of a PostgreSQL server for this test session (skips when none can be had)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg (PostgreSQL driver) not installed: pip install 'cuco-kernels[dev]'")
    if os.environ.get(PG_ENV):
        return os.environ[PG_ENV]
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip(f"PostgreSQL binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql; "
                    f"install postgresql or set {PG_ENV}")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to own a throwaway server")
    url, stop = _start_server(bindir)
    request.addfinalizer(stop)
    return url


def _admin_exec(admin_url: str, sql: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(admin_url)
    with psycopg.connect(host=u.host, port=u.port or 5432, user=u.username, password=u.password,
                         dbname=u.database or "postgres", autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty database on the session's server; dropped afterwards."""
    from sqlalchemy.engine import make_url

    name = f"cuco_test_{uuid.uuid4().hex[:10]}"
    _admin_exec(pg_server, f'CREATE DATABASE "{name}"')
    yield make_url(pg_server).set(database=name).render_as_string(hide_password=False)
    _admin_exec(pg_server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's store lives: a SQLite file path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "db" / "candidates.db")
    return request.getfixturevalue("pg_url")
