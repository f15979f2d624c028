"""Baseline: the schema cuco wrote before Alembic (schema_version 2: runs, candidates,
evaluations, llm_calls, agent_steps). Older databases are brought here by the pre-Alembic steps in
candidates_db.migrations and stamped; this revision itself changes nothing.

Revision ID: 0001_baseline
Revises:
"""

revision = "0001_baseline"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass
