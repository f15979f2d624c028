"""Alembic's entry point for cuco's candidates database (run by candidates_db.migrations, never by
the `alembic` command line: the connection comes in ``config.attributes``, inside the caller's
transaction and migration lock)."""

from alembic import context

from candidates_db.schema import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
