"""evaluations.sol: the SOL fraction (design_space.figures' geometric mean of bound / time over
the shapes) as a real column, filled in from each stored evaluation, and in the leaderboard's
covering index, so sorting a large run by SOL reads no payloads.

Revision ID: 0002_evaluation_sol
Revises: 0001_baseline
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_evaluation_sol"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None

_INDEX = "ix_evaluations_latest"
_BATCH = 500


def upgrade() -> None:
    # SQLite and PostgreSQL both take a nullable ADD COLUMN as a plain ALTER TABLE (no table copy).
    op.add_column("evaluations", sa.Column("sol", sa.Float(), nullable=True))
    _backfill(op.get_bind())
    op.execute(f"DROP INDEX IF EXISTS {_INDEX}")  # a version-1 database never had it
    op.create_index(_INDEX, "evaluations", ["candidate_id", "id", "status", "stage", "fitness", "timing_source", "sol"])


def _backfill(conn: sa.Connection) -> None:
    from candidates_db.values import sol_of_payload  # noqa: PLC0415  (the one definition of the stored figure)

    table = sa.table("evaluations", sa.column("id", sa.Integer), sa.column("payload", sa.JSON),
                     sa.column("timing_source", sa.String), sa.column("sol", sa.Float))
    last = 0
    while True:
        rows = conn.execute(sa.select(table.c.id, table.c.payload).where(table.c.id > last,
                                                                         table.c.timing_source.is_not(None))
                            .order_by(table.c.id).limit(_BATCH)).all()
        if not rows:
            return
        for row_id, payload in rows:
            sol = sol_of_payload(payload)
            if sol is not None:
                conn.execute(table.update().where(table.c.id == row_id).values(sol=sol))
        last = rows[-1][0]
