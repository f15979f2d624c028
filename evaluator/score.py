"""The score stage: what a candidate that passed emulation is credited with, from its code.

The design point is the one its code was observed to implement (``observed_point``), never the
one it declares: a declaration the observation contradicts is refused, naming both. The compute
rate comes from its code features (``features``: tensor cores in the SASS, the share of FLOPs
through the tile, spills), and its launches per call from what the emulator saw it launch
(``design_space.launch_count``: never fewer than its point is charged with), whatever
synchronisation the trace saw. Every time here is a model estimate, labelled ``simulated``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from design_space.calibration import Calibration
from design_space.candidate import Candidate
from design_space.code_features import CodeFeatures
from design_space.evaluation import BuildStats, Timing, TimingSource
from design_space.hardware import HardwareProfile
from design_space import launch_count
from design_space.model import shape_model
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
    code = launch_fit(obs, spec, pattern, hw)
    timings = tuple(simulate(spec, pattern, hw, obs.point, features, calibration, code))
    if code is not None:
        notes += (_charged_launches(spec, pattern, hw, obs.point, code),)
    return Scored(None, obs.point, notes, features, timings, tuple(flags))


def launch_fit(obs: observed_point.Observation, spec: KernelSpec, pattern: Pattern,
               hw: HardwareProfile) -> Optional[launch_count.LaunchFit]:
    """The code's launches per call against the observed point's chunks (design_space.launch_count)."""
    if obs.point is None:
        return None
    samples = [launch_count.LaunchSample(pattern.cost(dims, world, spec.dtype), world, n)
               for dims, world, n in obs.launches]
    return launch_count.fit(samples, obs.point, hw, spec.dtype.value)


def _charged_launches(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, point: DesignPoint,
                      code: launch_count.LaunchFit) -> str:
    """One line of evidence: the launches charged at the largest shape, and the point's own."""
    world, shape = spec.target_world, spec.shapes[-1]
    target = shape_model(pattern.cost(shape.at(world), world, spec.dtype), world, hw, spec.dtype.value)
    return (f"launches: up to {code.least:.0f} host operations per call at emulation shapes "
            f"({code.fixed:.1f} + {code.per_chunk:.2f} per chunk of the point); charged "
            f"{launch_count.launches_at(code, target, point):.0f} at {shape.name}, where the point alone "
            f"would be charged {target.launches(point)}")


def simulate(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, point: DesignPoint,
             features: Optional[CodeFeatures], calibration: Optional[Calibration],
             code: Optional[launch_count.LaunchFit] = None) -> list[Timing]:
    """Model estimates for every shape of the sweep at the target world size (``simulated``), with
    the launches the code makes where they exceed the point's (``code``; None: the point's own)."""
    world = spec.target_world
    out = []
    for shape in spec.shapes:
        model = shape_model(pattern.cost(shape.at(world), world, spec.dtype), world, hw, spec.dtype.value,
                            features, calibration)
        est = model.estimate(point, launch_count.launches_at(code, model, point))
        out.append(Timing(shape=shape.name, world=world, source=TimingSource.SIMULATED, seconds=est.simulated,
                          bound_seconds=est.bound, baseline_seconds=est.baseline))
    return out
