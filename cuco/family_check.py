"""Check a pattern's template family: every valid design point (or a seeded sample) must pass
the guard, build with nvcc and pass CPU emulation against the reference. Used by
``scripts/check_all_points.py`` and, on a sample, by the test suite."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from design_space import Candidate, DesignPoint, KernelSpec, Origin, OriginKind, Status, get_pattern, get_profile
from design_space import valid_points
from evaluator.cascade import Evaluator, EvaluatorConfig


@dataclass(frozen=True)
class PointResult:
    point: DesignPoint
    status: Status
    reason: str
    seconds: dict[str, float]


@dataclass(frozen=True)
class FamilyReport:
    total_valid: int
    results: tuple[PointResult, ...]
    wall_s: float

    @property
    def passed(self) -> int:
        return sum(r.status is Status.OK for r in self.results)

    @property
    def failures(self) -> list[PointResult]:
        return [r for r in self.results if r.status is not Status.OK]


def check_family(spec: KernelSpec, cache_dir: Path, *, sample: Optional[int] = None, seed: int = 0,
                 workers: int = 2, hardware: Optional[str] = None,
                 on_result: Callable[[PointResult], None] = lambda r: None) -> FamilyReport:
    """Points valid on ``hardware`` (default: the spec's), built for that profile's arch."""
    pattern, hw = get_pattern(spec.pattern), get_profile(hardware or spec.hardware)
    points = valid_points(pattern, hw, spec.restrictions)
    chosen = points if sample is None or sample >= len(points) else random.Random(seed).sample(points, sample)
    evaluator = Evaluator(spec, EvaluatorConfig(cache_dir=cache_dir, arch=hw.arch))
    evaluator.prepare()
    start = time.monotonic()

    def one(point: DesignPoint) -> PointResult:
        cand = Candidate(origin=Origin(kind=OriginKind.TEMPLATE, patch_type="check"), source=pattern.render(point),
                         point=point)
        ev = evaluator.evaluate(cand)
        result = PointResult(point, ev.status, ev.reason, dict(ev.stage_seconds))
        on_result(result)
        return result

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = tuple(pool.map(one, chosen))
    return FamilyReport(total_valid=len(points), results=results, wall_s=time.monotonic() - start)
