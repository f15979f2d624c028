"""Tables of the candidates database (SQLAlchemy 2.x declarative ORM).

The ORM rows never leave this package: ``store.Store`` converts them to ``design_space`` values.
Columns that the CLI and the leaderboard filter or sort on (status, stage, fitness, point key)
are real columns; everything else of an ``Evaluation`` lives in one JSON ``payload`` so that a
new field in the value does not need a schema migration.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Bump when a table or column changes, and add an Alembic revision for it under
# candidates_db/migration_scripts/versions (since version 3 every change is an Alembic step).
# 2: llm_calls and agent_steps (new tables only: create_all adds them, no upgrade step).
# 3: evaluations.sol (Alembic 0002_evaluation_sol). An older cuco refuses a newer version.
# A new index needs no bump: ``migrate`` adds missing indexes, and code without them reads the same tables.
SCHEMA_VERSION = 3


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def json_safe(value: Any) -> Any:
    """Non-finite floats as strings: standard JSON (and PostgreSQL) has no NaN/Infinity.

    A NaN max_abs_err is ordinary data (an output still holding the poison pattern); pydantic
    reads the strings back as floats.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


class UTCDateTime(TypeDecorator[datetime]):
    """Always hands back timezone-aware UTC datetimes.

    PostgreSQL keeps the zone (``timestamptz``). SQLite has no zone type: we store naive UTC
    there, because SQLAlchemy's SQLite format silently drops the offset and a local time would
    then read back as if it were UTC. A naive datetime coming in is taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Optional[datetime], dialect: Any) -> Optional[datetime]:
        if value is None:
            return None
        value = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Optional[datetime], dialect: Any) -> Optional[datetime]:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    pass


class SchemaVersionRow(Base):
    """One row (id 1): the schema version the file was last written with."""

    __tablename__ = "schema_version"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class RunRow(Base):
    __tablename__ = "runs"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    spec_name: Mapped[str] = mapped_column(String(200), nullable=False)
    pattern: Mapped[str] = mapped_column(String(100), nullable=False)
    spec_hash: Mapped[str] = mapped_column(String(128), nullable=False)
    spec_json: Mapped[str] = mapped_column(Text, nullable=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    note: Mapped[str] = mapped_column(Text, nullable=False, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class CandidateRow(Base):
    __tablename__ = "candidates"
    __table_args__ = (
        # Dedup is per run: the same source in two runs is two candidates.
        UniqueConstraint("run_name", "content_hash", name="uq_candidates_run_hash"),
        Index("ix_candidates_run_generation", "run_name", "generation"),
        # Covers every column the web leaderboard filters and sorts on, so a page of a large run
        # reads this index instead of rows that carry whole sources.
        Index("ix_candidates_board", "run_name", "seq", "generation", "island", "origin_kind", "point_key", "id"),
    )
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # Insertion order: created_at alone can tie within one clock tick; ids are random.
    seq: Mapped[int] = mapped_column(Integer, nullable=False, index=True)
    run_name: Mapped[str] = mapped_column(ForeignKey("runs.name", ondelete="CASCADE"), nullable=False)
    parent_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    generation: Mapped[int] = mapped_column(Integer, nullable=False)
    island: Mapped[int] = mapped_column(Integer, nullable=False)
    origin_kind: Mapped[str] = mapped_column(String(20), nullable=False)
    origin_model: Mapped[Optional[str]] = mapped_column(String(200))
    origin_patch_type: Mapped[Optional[str]] = mapped_column(String(50))
    source: Mapped[str] = mapped_column(Text, nullable=False)
    point: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    point_key: Mapped[Optional[str]] = mapped_column(String(200), index=True)
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class EvaluationRow(Base):
    """History of evaluations: a candidate may be evaluated again; the highest id is current."""

    __tablename__ = "evaluations"
    # Finds each candidate's latest evaluation and what the leaderboard filters and sorts on, without
    # reading the rows (their payloads are large).
    __table_args__ = (Index("ix_evaluations_latest", "candidate_id", "id", "status", "stage", "fitness",
                            "timing_source", "sol"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    candidate_id: Mapped[str] = mapped_column(
        ForeignKey("candidates.id", ondelete="CASCADE"), nullable=False, index=True
    )
    status: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    stage: Mapped[str] = mapped_column(String(32), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False, default="")
    # Evaluation.fitness, denormalised so the leaderboard can ORDER BY it in SQL.
    fitness: Mapped[Optional[float]] = mapped_column(Float, index=True)
    timing_source: Mapped[Optional[str]] = mapped_column(String(20))
    # Evaluation.sol_fraction (any evaluation with timings), denormalised so the leaderboard can sort by it.
    sol: Mapped[Optional[float]] = mapped_column(Float)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class LLMCallRow(Base):
    """One ``design_space.llm.LLMCall``: every field, plus the run it was spent in.

    ``candidate_id`` is deliberately not a foreign key: a call can serve a candidate that is
    never stored (rejected by the novelty filter, or a patch that did not apply).
    """

    __tablename__ = "llm_calls"
    __table_args__ = (Index("ix_llm_calls_run_candidate", "run_name", "candidate_id"),)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    run_name: Mapped[str] = mapped_column(ForeignKey("runs.name", ondelete="CASCADE"), nullable=False)
    purpose: Mapped[str] = mapped_column(String(200), nullable=False)
    candidate_id: Mapped[Optional[str]] = mapped_column(String(64))
    agent_step: Mapped[Optional[str]] = mapped_column(Text)
    provider: Mapped[str] = mapped_column(String(100), nullable=False)
    model: Mapped[str] = mapped_column(Text, nullable=False)
    prompt: Mapped[str] = mapped_column(Text, nullable=False)
    response: Mapped[str] = mapped_column(Text, nullable=False)
    prompt_chars: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    tokens_in: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    latency_s: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    cost_usd: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    retries: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    error: Mapped[Optional[str]] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class AgentStepRow(Base):
    """One step of an agent's trajectory (the fast path's graph nodes, in order)."""

    __tablename__ = "agent_steps"
    __table_args__ = (UniqueConstraint("run_name", "agent", "step", name="uq_agent_steps_run_agent_step"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_name: Mapped[str] = mapped_column(ForeignKey("runs.name", ondelete="CASCADE"), nullable=False)
    agent: Mapped[str] = mapped_column(String(100), nullable=False)
    step: Mapped[int] = mapped_column(Integer, nullable=False)
    node: Mapped[str] = mapped_column(String(200), nullable=False)
    iteration: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    summary: Mapped[str] = mapped_column(Text, nullable=False, default="")
    status: Mapped[Optional[str]] = mapped_column(String(32))  # the evaluation status, when the step evaluated
    reason: Mapped[str] = mapped_column(Text, nullable=False, default="")
    candidate_id: Mapped[Optional[str]] = mapped_column(String(64))
    # Whatever else the agent wants kept with the step (iteration budget, backend, ...).
    details: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
