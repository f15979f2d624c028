"""The score stage: what a candidate that passed emulation is credited with, from its code.

The design point is the one its code was observed to implement (``observed_point``), never the
one it declares: a declaration the observation contradicts is refused, naming both. The compute
rate comes from its code features (``features``: tensor cores in the SASS, the share of FLOPs
through the tile, spills). Every time here is a model estimate, labelled ``simulated``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from design_space.calibration import Calibration
from design_space.candidate import Candidate
from design_space.code_features import CodeFeatures
from design_space.evaluation import BuildStats, Timing, TimingSource
from design_space.hardware import HardwareProfile
from design_space.model import estimate
from design_space.patterns import Pattern
from design_space.point import DesignPoint
from design_space.spec import KernelSpec
from evaluator import observed_point
from evaluator.features import read_features


@dataclass(frozen=True)
class Scored:
    refused: Optional[str]  # why the declaration is refused (the candidate is rejected), else None
    point: Optional[DesignPoint]  # the observed point the times are for
    observed: tuple[str, ...]  # evidence and what stayed unsettled
    features: CodeFeatures
    timings: tuple[Timing, ...]
    flags: tuple[str, ...]


def score(cand: Candidate, spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, build: Optional[BuildStats],
          traces, calibration: Optional[Calibration], tile_dependence: Optional[float] = None) -> Scored:
    obs = observed_point.observe(traces, cand.source, cand.point)
    features = read_features(build, obs, pattern, spec.dtype, tile_dependence)
    notes = (*obs.evidence, *(f"unsettled: {u}" for u in obs.unsettled))
    refused = observed_point.disagreement(cand.point, obs) if cand.point is not None else None
    if refused:
        return Scored(refused, obs.point, notes, features, (), ())
    flags = [f"compute: {features.source}"]
    if obs.point is None:
        return Scored(None, None, notes, features, (), ("no_observed_point: not simulated",))
    if obs.unsettled:
        flags.append("observed_point_partly_declared: " + "; ".join(u.split(":")[0] for u in obs.unsettled))
    return Scored(None, obs.point, notes, features, tuple(simulate(spec, pattern, hw, obs.point, features, calibration)),
                  tuple(flags))


def simulate(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, point: DesignPoint,
             features: Optional[CodeFeatures], calibration: Optional[Calibration]) -> list[Timing]:
    """Model estimates for every shape of the sweep at the target world size (``simulated``)."""
    world = spec.target_world
    out = []
    for shape in spec.shapes:
        est = estimate(pattern.cost(shape.at(world), world, spec.dtype), point, world, hw, spec.dtype.value,
                       features=features, calibration=calibration)
        out.append(Timing(shape=shape.name, world=world, source=TimingSource.SIMULATED, seconds=est.simulated,
                          bound_seconds=est.bound, baseline_seconds=est.baseline))
    return out
