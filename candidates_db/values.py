"""Conversions between the ORM rows of ``schema`` and the ``design_space`` values ``Store`` hands out."""

from __future__ import annotations

import math
from typing import Optional

from candidates_db.schema import CandidateRow, EvaluationRow, RunRow, json_safe, utcnow
from design_space.candidate import Candidate, Origin
from design_space.errors import StoreError
from design_space.evaluation import Evaluation
from design_space.point import DesignPoint
from design_space.run import RunInfo, RunStatus


def run_value(row: RunRow) -> RunInfo:
    return RunInfo(name=row.name, spec_name=row.spec_name, pattern=row.pattern, spec_hash=row.spec_hash,
                   spec_json=row.spec_json, config=row.config or {}, status=RunStatus(row.status),
                   note=row.note, created_at=row.created_at, updated_at=row.updated_at)


def candidate_row(run: str, c: Candidate) -> CandidateRow:
    return CandidateRow(
        id=c.id, run_name=run, parent_ids=list(c.parent_ids), generation=c.generation, island=c.island,
        origin_kind=c.origin.kind.value, origin_model=c.origin.model, origin_patch_type=c.origin.patch_type,
        source=c.source, point=c.point.model_dump(mode="json") if c.point else None,
        point_key=c.point.key() if c.point else None, content_hash=c.content_hash, created_at=utcnow(),
    )


def candidate_value(row: CandidateRow) -> Candidate:
    origin = Origin(kind=row.origin_kind, model=row.origin_model, patch_type=row.origin_patch_type)
    point = DesignPoint.model_validate(row.point) if row.point is not None else None
    return Candidate(id=row.id, parent_ids=tuple(row.parent_ids or ()), generation=row.generation,
                     island=row.island, origin=origin, source=row.source, point=point)


def evaluation_row(e: Evaluation) -> EvaluationRow:
    try:
        source = e.timing_source
    except ValueError as err:
        raise StoreError(f"evaluation of {e.candidate_id} mixes measured and simulated timings",
                         "report this as a cuco bug: the evaluator must label one timing source") from err
    fitness = e.fitness
    return EvaluationRow(
        candidate_id=e.candidate_id, status=e.status.value, stage=e.stage.value, reason=e.reason,
        fitness=None if fitness is None or math.isnan(fitness) else fitness, sol=_finite(e.sol_fraction),
        timing_source=source.value if source else None,
        payload=json_safe(e.model_dump(mode="json")), created_at=utcnow(),
    )


def _finite(value: Optional[float]) -> Optional[float]:
    return None if value is None or not math.isfinite(value) else value


def sol_of_payload(payload: dict) -> Optional[float]:
    """The ``sol`` column's value for a stored evaluation payload (the schema upgrade's backfill)."""
    return _finite(Evaluation.model_validate(payload).sol_fraction)


def evaluation_value(row: Optional[EvaluationRow]) -> Optional[Evaluation]:
    return None if row is None else Evaluation.model_validate(row.payload)
