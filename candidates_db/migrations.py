"""Schema versioning without alembic: one version number in the ``schema_version`` table.

``migrate`` brings any database this code can read up to ``SCHEMA_VERSION``: it creates missing
tables and indexes, runs the upgrade step of each version in between, and records the new version. A
database written by a newer cuco is refused instead of being half-understood.
"""

from __future__ import annotations

from typing import Callable

from sqlalchemy import Connection, Engine, Index, inspect, select, text
from sqlalchemy.exc import DatabaseError

from candidates_db.schema import SCHEMA_VERSION, Base, SchemaVersionRow, utcnow
from design_space.errors import StoreError

# UPGRADES[n] turns a version-(n-1) database into version n (ALTER TABLE, data copies).
# Tables that are new in version n need no step: ``create_all`` adds them.
UPGRADES: dict[int, Callable[[Connection], None]] = {}
_PG_LOCK_KEY = 0x6375636F  # 'cuco': any fixed key shared by every cuco process


def stored_version(conn: Connection) -> int | None:
    """The recorded schema version, or None for a database cuco has never written."""
    if not inspect(conn).has_table(SchemaVersionRow.__tablename__):
        return None
    return conn.execute(select(SchemaVersionRow.version).where(SchemaVersionRow.id == 1)).scalar()


def _refuse_newer(version: int, where: str) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"candidates database {where} has schema version {version}, "
            f"but this cuco only knows up to version {SCHEMA_VERSION}",
            "upgrade cuco (pip install -U cuco-kernels) to read it, or use another database",
        )


def _missing_indexes(conn: Connection) -> list[Index]:
    """Declared indexes of existing tables that the database lacks (added by a later cuco)."""
    inspector = inspect(conn)
    missing = []
    for table in Base.metadata.sorted_tables:
        if table.indexes and inspector.has_table(table.name):
            have = {ix["name"] for ix in inspector.get_indexes(table.name)}
            missing += [ix for ix in table.indexes if ix.name not in have]
    return missing


def _lock(conn: Connection) -> None:
    """Serialise migrations: two processes opening a fresh database at once must not both
    create tables or insert the version row."""
    if conn.dialect.name == "sqlite":
        # pysqlite defers BEGIN to the first INSERT; take the write lock now, before we read.
        if not conn.connection.dbapi_connection.in_transaction:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})


def _upgrade(conn: Connection) -> None:
    version = stored_version(conn)  # again: another process may have migrated while we waited
    if version is not None:
        _refuse_newer(version, conn.engine.url.render_as_string(hide_password=True))
    Base.metadata.create_all(conn, checkfirst=True)
    for index in _missing_indexes(conn):  # create_all adds no index to a table that exists
        index.create(conn, checkfirst=True)
    # A fresh database gets the current tables from create_all: no upgrade steps to run.
    start = SCHEMA_VERSION if version is None else version
    for step in range(start + 1, SCHEMA_VERSION + 1):
        if step in UPGRADES:
            UPGRADES[step](conn)
    if version != SCHEMA_VERSION:
        _record(conn, exists=version is not None)


def _record(conn: Connection, *, exists: bool) -> None:
    table = SchemaVersionRow.__table__
    if exists:
        conn.execute(table.update().where(table.c.id == 1).values(version=SCHEMA_VERSION, updated_at=utcnow()))
    else:
        conn.execute(table.insert().values(id=1, version=SCHEMA_VERSION, updated_at=utcnow()))


def migrate(engine: Engine) -> int:
    """Create missing tables and record the schema version; returns the version now stored.

    Raises ``StoreError`` when the database was written by a newer cuco; database errors
    (unreachable server, not a database file) propagate for the caller to explain.
    """
    with engine.connect() as conn:
        version = stored_version(conn)
        indexes_missing = version == SCHEMA_VERSION and bool(_missing_indexes(conn))
    if version is not None:
        _refuse_newer(version, engine.url.render_as_string(hide_password=True))
    if version == SCHEMA_VERSION and not indexes_missing:
        return version  # the common case takes no write lock, so read-only files open too
    try:
        with engine.begin() as conn:
            _lock(conn)
            _upgrade(conn)
    except DatabaseError:
        if not indexes_missing:
            raise
        # Only indexes were missing (they speed up the web leaderboard, nothing needs them):
        # a file we may not write still opens, as it did before they were declared.
    return SCHEMA_VERSION
