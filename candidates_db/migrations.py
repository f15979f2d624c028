"""Schema versioning: a coarse version number in the ``schema_version`` table (what an older cuco
checks before it refuses a newer database) and, since version 3, Alembic revisions
(candidates_db/migration_scripts) for every change, with per-dialect DDL where a change needs it.

``migrate`` brings any database this code can read up to ``SCHEMA_VERSION`` and Alembic's head:
a fresh one gets the current tables and is stamped at head; an older one gets the pre-Alembic
steps (missing tables and indexes), is stamped at the baseline if Alembic never saw it, then
upgraded, with one line on stderr saying so. A database written by a newer cuco (a higher
version, or an Alembic revision this cuco does not have) is refused instead of being
half-understood. Concurrent openers serialise on a lock (SQLite write lock, PostgreSQL advisory).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional

from sqlalchemy import Connection, Engine, Index, inspect, select, text
from sqlalchemy.exc import DatabaseError

from candidates_db.engine import MIGRATION_LOCK, write_lock
from candidates_db.schema import SCHEMA_VERSION, Base, SchemaVersionRow, utcnow
from design_space.errors import StoreError

# UPGRADES[n] turns a version-(n-1) database into version n, for n <= 2 (before Alembic).
# Tables that are new in version n need no step: ``create_all`` adds them.
UPGRADES: dict[int, Callable[[Connection], None]] = {}
SCRIPTS = Path(__file__).with_name("migration_scripts")
BASELINE = "0001_baseline"  # the version-2 schema, where Alembic's history starts


def stored_version(conn: Connection) -> int | None:
    """The recorded schema version, or None for a database cuco has never written."""
    if not inspect(conn).has_table(SchemaVersionRow.__tablename__):
        return None
    return conn.execute(select(SchemaVersionRow.version).where(SchemaVersionRow.id == 1)).scalar()


def _alembic(conn: Connection):
    from alembic.config import Config  # noqa: PLC0415  (only when a database is created or upgraded)

    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPTS))
    cfg.attributes["connection"] = conn
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    return ScriptDirectory(str(SCRIPTS)).get_current_head()


def known_revision(revision: str) -> bool:
    from alembic.script import ScriptDirectory  # noqa: PLC0415
    from alembic.util import CommandError  # noqa: PLC0415

    try:
        return ScriptDirectory(str(SCRIPTS)).get_revision(revision) is not None
    except CommandError:
        return False


def stored_revision(conn: Connection) -> Optional[str]:
    """Alembic's revision of this database (None: Alembic never ran on it)."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _refuse_newer(version: int, where: str, revision: Optional[str] = None) -> None:
    if revision is not None and not known_revision(revision):
        raise StoreError(
            f"candidates database {where} is at schema revision {revision}, which this cuco does not know",
            "upgrade cuco (pip install -U cuco-kernels) to read it, or use another database",
        )
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


def _upgrade(conn: Connection) -> None:
    from alembic import command  # noqa: PLC0415

    version = stored_version(conn)  # again: another process may have migrated while we waited
    revision = stored_revision(conn)
    where = conn.engine.url.render_as_string(hide_password=True)
    if version is not None:
        _refuse_newer(version, where, revision)
    fresh = version is None
    if not fresh:  # the pre-Alembic steps bring it to the baseline schema (version 2)
        for step in range(version + 1, 3):
            if step in UPGRADES:
                UPGRADES[step](conn)
    Base.metadata.create_all(conn, checkfirst=True)  # new tables (a fresh database: all of them, current)
    cfg = _alembic(conn)
    head = head_revision()
    if fresh:
        command.stamp(cfg, head)
    elif revision != head:
        print(f"cuco: upgrading the candidates database {where} (schema {version} -> {SCHEMA_VERSION}, "
              f"revision {revision or BASELINE} -> {head})", file=sys.stderr)
        if revision is None:
            command.stamp(cfg, BASELINE)
        command.upgrade(cfg, head)
    for index in _missing_indexes(conn):  # create_all adds no index to a table that exists
        index.create(conn, checkfirst=True)
    if version != SCHEMA_VERSION:
        _record(conn, exists=not fresh)


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
        revision = stored_revision(conn)
        current = version == SCHEMA_VERSION and revision == head_revision()
        indexes_missing = current and bool(_missing_indexes(conn))
    if version is not None:
        _refuse_newer(version, engine.url.render_as_string(hide_password=True), revision)
    if current and not indexes_missing:
        return SCHEMA_VERSION  # the common case takes no write lock, so read-only files open too
    try:
        with engine.begin() as conn:
            write_lock(conn, MIGRATION_LOCK)
            _upgrade(conn)
    except DatabaseError:
        if not indexes_missing:
            raise
        # Only indexes were missing (they speed up the web leaderboard, nothing needs them):
        # a file we may not write still opens, as it did before they were declared.
    return SCHEMA_VERSION
