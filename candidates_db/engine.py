"""Engines for ``Store.open``: a path or URL becomes a configured SQLAlchemy engine.

A filesystem path means a SQLite file (WAL mode, so the CLI can read while a search writes);
a URL is used as is (PostgreSQL for runs spread over machines). A read-only engine is for
readers that must never change the database (the web leaderboard): SQLite opens the file with
``mode=ro`` (no WAL switch, no file created), PostgreSQL runs every transaction read-only.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, Union

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from design_space.errors import StoreError

BUSY_TIMEOUT_S = 30  # how long a SQLite writer waits for another writer before failing
# PostgreSQL advisory-lock keys shared by every cuco process ('cuco', 'cuc1').
MIGRATION_LOCK, WRITE_LOCK = 0x6375636F, 0x63756331


def write_lock(conn: Connection, key: int = WRITE_LOCK) -> None:
    """Take the database's write lock for the rest of this transaction, before it reads what it
    will write from (a new row's sequence number, the version row): SQLite's reserved lock (pysqlite
    defers BEGIN to the first write, so a bare read would see a state another writer is changing),
    a PostgreSQL transaction-level advisory lock. Writers queue; readers are not blocked."""
    if conn.dialect.name == "sqlite":
        if not conn.connection.dbapi_connection.in_transaction:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def where(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def url_for(target: Union[str, Path], *, create_folder: bool = True) -> URL:
    """A path (no ``://``) becomes an absolute ``sqlite:///`` URL; ``postgresql://`` gets psycopg 3."""
    if isinstance(target, Path) or "://" not in str(target):
        path = Path(target).expanduser().resolve()
        if create_folder:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create the folder for the candidates database {path}: {e}",
                                 "pick a path in a folder you can write (--db PATH)") from e
        return URL.create("sqlite", database=str(path))
    try:
        url = make_url(str(target))
    except ArgumentError as e:
        raise StoreError(f"cannot parse the database URL {target!r}",
                         "give a file path or a URL like postgresql://user@host/db") from e
    # SQLAlchemy's bare "postgresql" means psycopg2, which cuco does not depend on.
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def _enable_wal(cur: Any) -> None:
    """WAL (persistent in the file): readers never block the writer, nor it them.

    Switching a fresh file to WAL needs an exclusive lock and SQLite reports a clash at once
    instead of calling the busy handler, so processes opening a new file together retry here.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
    _enable_wal(cur)
    cur.execute("PRAGMA synchronous = NORMAL")  # durable enough under WAL, much faster
    cur.execute("PRAGMA foreign_keys = ON")
    cur.close()


def _sqlite_read_only_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
    cur.execute("PRAGMA query_only = ON")  # a second lock besides mode=ro: no statement may write
    cur.close()


def _driver_error(url: URL, e: Exception) -> StoreError:
    if isinstance(e, NoSuchModuleError):
        return StoreError(f"unknown database kind in {where(url)}", "use a file path (SQLite) or a postgresql:// URL")
    return StoreError(f"the database driver for {where(url)} is not installed ({e})",
                      "pip install 'cuco-kernels[postgres]' for PostgreSQL")


def create_store_engine(url: URL) -> Engine:
    try:
        if url.get_backend_name() == "sqlite":
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})
            event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        return create_engine(url, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as e:
        raise _driver_error(url, e) from e


def _read_only_sqlite_url(url: URL) -> URL:
    """The file as a SQLite URI with ``mode=ro``: opening it can neither create nor change it."""
    database = url.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        raise StoreError(f"cannot open {where(url)} read-only", "give the path of an existing cuco.db file")
    path = Path(database).expanduser().resolve()
    if not path.is_file():
        raise StoreError(f"no candidates database at {path}",
                         "pass the cuco.db of a run (`cuco evolve` creates it), its run folder, or a database URL")
    # as_uri() percent-encodes spaces, '?', '#' and '%' in the path, which SQLite's URI parser decodes.
    return URL.create("sqlite", database=path.as_uri(), query={"mode": "ro", "uri": "true"})


def create_read_only_engine(url: URL) -> Engine:
    try:
        if url.get_backend_name() == "sqlite":
            engine = create_engine(_read_only_sqlite_url(url), connect_args={"timeout": BUSY_TIMEOUT_S})
            event.listen(engine, "connect", _sqlite_read_only_pragmas)
            return engine
        if url.get_backend_name() == "postgresql":
            return create_engine(url, pool_pre_ping=True,
                                 connect_args={"options": "-c default_transaction_read_only=on"})
    except (NoSuchModuleError, ImportError) as e:
        raise _driver_error(url, e) from e
    raise StoreError(f"cannot open {where(url)} read-only: only SQLite files and PostgreSQL are supported",
                     "use a file path (SQLite) or a postgresql:// URL")
