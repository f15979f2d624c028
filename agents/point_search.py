"""Model-guided search over the points of one design space.

Three pieces, all pure and cheap:

- ``Prior``: every valid point of the space with the log of the fitness the analytic model
  predicts for it (the evaluator's ``simulated`` fitness: geometric-mean speedup over the spec's
  shapes at the target world size). Thousands of points take milliseconds, and the result is
  cached, so a proposer can rank the whole space on every call. Points are addressed by index
  (hashing a pydantic point is slow enough to matter over thousands per generation).
- ``Observations``: the history of a run digested into residuals, failures and tried points.
- ``Correction``: what the measurements say the model gets wrong. Residuals
  ``log(measured fitness) - log(predicted)`` are explained as a sum of per-dimension-value
  effects (ridge-shrunk backfitting), so one slow ``issuer=thread`` measurement lowers every
  thread point, and values that fail more often than the rest (build, emulation, wrong result)
  are penalised. With no residual (the model is exact) the correction is zero and the ranking is
  the model's own.
"""

from __future__ import annotations

import math
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Optional, Sequence

from design_space.candidate import Candidate
from design_space.evaluation import Evaluation
from design_space.hardware import HardwareProfile
from design_space.code_features import TENSOR_CORE_TYPICAL
from design_space.model import estimate
from design_space.patterns import Pattern
from design_space.point import DIMENSIONS, DesignPoint
from design_space.space import valid_points
from design_space.spec import KernelSpec

RIDGE = 2.0  # pseudo-observations of "no effect" per dimension value: one noisy point moves little
FAIL_WEIGHT = 2.0  # log-fitness penalty per unit of failure rate above the run's overall rate
_CACHE_SIZE = 16
Feature = tuple[str, object]  # (dimension, value)


def features(point: DesignPoint) -> tuple[Feature, ...]:
    return tuple((d, getattr(point, d)) for d in DIMENSIONS)


@dataclass(frozen=True)
class Prior:
    """The valid points of one (pattern, hardware, spec), with per index: the model's log
    fitness, the point's features and its key (the stable tie-break)."""

    points: tuple[DesignPoint, ...]
    log_fitness: tuple[float, ...]
    feats: tuple[tuple[Feature, ...], ...]
    keys: tuple[str, ...]
    index: dict[DesignPoint, int]
    costs: tuple = ()  # WorkloadCost per shape, to predict points outside the space
    world: int = 1
    hardware: Optional[HardwareProfile] = None
    dtype: str = "bf16"

    def of(self, point: DesignPoint) -> float:
        """Log predicted fitness of any point (one outside the space is computed on demand)."""
        i = self.index.get(point)
        return self.log_fitness[i] if i is not None else _log_fitness(point, self.costs, self.world,
                                                                      self.hardware, self.dtype)


def _log_fitness(point: DesignPoint, costs: Sequence, world: int, hw: Optional[HardwareProfile], dtype: str) -> float:
    """Mean over shapes of log(baseline / simulated): the log of the evaluator's simulated fitness,
    for code with the templates' features (the tensor-core tile, which every family renders)."""
    logs = []
    for cost in costs if hw is not None else ():
        est = estimate(cost, point, world, hw, dtype, features=TENSOR_CORE_TYPICAL)
        if est.simulated > 0 and est.baseline > 0:
            logs.append(math.log(est.baseline / est.simulated))
    return sum(logs) / len(logs) if logs else 0.0


_PRIORS: "OrderedDict[tuple, tuple[Pattern, Prior]]" = OrderedDict()


def prior_for(spec: KernelSpec, pattern: Pattern, hardware: HardwareProfile) -> Prior:
    """The cached ``Prior`` of this space (the loop asks for it once per generation)."""
    key = (pattern.name, hardware.model_dump_json(),
           spec.model_dump_json(include={"shapes", "world_sizes", "dtypes", "restrictions"}))
    hit = _PRIORS.get(key)
    if hit is not None and hit[0] is pattern:  # a re-registered pattern is a new space
        _PRIORS.move_to_end(key)
        return hit[1]
    world, dtype = spec.target_world, spec.dtype
    costs = []
    for shape in spec.shapes:
        try:
            costs.append(pattern.cost(shape.at(world), world, dtype))
        except (ArithmeticError, KeyError, ValueError):  # a shape the pattern cannot cost: rank by the others
            continue
    points = tuple(valid_points(pattern, hardware, spec.restrictions))
    prior = Prior(points=points, log_fitness=tuple(_log_fitness(p, costs, world, hardware, dtype.value) for p in points),
                  feats=tuple(features(p) for p in points), keys=tuple(p.key() for p in points),
                  index={p: i for i, p in enumerate(points)}, costs=tuple(costs), world=world, hardware=hardware,
                  dtype=dtype.value)
    _PRIORS[key] = (pattern, prior)
    if len(_PRIORS) > _CACHE_SIZE:
        _PRIORS.popitem(last=False)
    return prior


@dataclass
class Observations:
    """A run's history as the search sees it."""

    residual: dict[DesignPoint, float] = field(default_factory=dict)  # log measured - log predicted (ok only)
    measured: dict[DesignPoint, tuple[float, Candidate]] = field(default_factory=dict)  # best fitness per point
    failed: set[DesignPoint] = field(default_factory=set)
    tried: set[DesignPoint] = field(default_factory=set)  # declared by any candidate, evaluated or not

    def best(self, k: int) -> list[tuple[DesignPoint, float, Candidate]]:
        """The ``k`` fittest measured points, best first."""
        ranked = sorted(self.measured.items(), key=lambda kv: (-kv[1][0], kv[0].key()))
        return [(p, f, c) for p, (f, c) in ranked[:k]]


def observe(history: Sequence[tuple[Candidate, Optional[Evaluation]]], prior: Prior) -> Observations:
    obs = Observations()
    for cand, ev in history:
        p = cand.point
        if p is None:
            continue
        obs.tried.add(p)
        if ev is None:  # proposed, not evaluated yet: tried, but nothing learned
            continue
        fit = ev.fitness
        if fit is None or fit <= 0:
            obs.failed.add(p)
        elif p not in obs.measured or fit > obs.measured[p][0]:
            obs.measured[p] = (fit, cand)
            obs.residual[p] = math.log(fit) - prior.of(p)
    obs.failed -= set(obs.measured)  # a point that also succeeded (another rendering) is not failing
    return obs


class Correction:
    """Additive per-dimension-value model of the residuals, plus a penalty for failing values."""

    def __init__(self, obs: Observations, ridge: float = RIDGE, sweeps: int = 4) -> None:
        self.effect: dict[Feature, float] = defaultdict(float)
        self.counts: dict[Feature, int] = defaultdict(int)
        self.penalty: dict[Feature, float] = {}
        self.mean = 0.0  # shared offset (e.g. measured vs simulated scale): moves no ranking
        self.spread = 0.0  # standard deviation of the residuals: how wrong the model has been
        self._fit(obs.residual, ridge, sweeps)
        self._penalise(obs)

    def _fit(self, residual: dict[DesignPoint, float], ridge: float, sweeps: int) -> None:
        if not residual:
            return
        rows = [(features(p), r) for p, r in residual.items()]
        self.mean = sum(r for _, r in rows) / len(rows)
        self.spread = math.sqrt(sum((r - self.mean) ** 2 for _, r in rows) / len(rows))
        for feats, _ in rows:
            for f in feats:
                self.counts[f] += 1
        for _ in range(sweeps):  # backfitting: each dimension explains what the others leave
            for i, dim in enumerate(DIMENSIONS):
                sums: dict[object, float] = defaultdict(float)
                for feats, r in rows:
                    others = sum(self.effect[f] for j, f in enumerate(feats) if j != i)
                    sums[feats[i][1]] += r - self.mean - others
                for v, s in sums.items():
                    self.effect[(dim, v)] = s / (self.counts[(dim, v)] + ridge)

    def _penalise(self, obs: Observations) -> None:
        """A value whose points fail more often than the run's points overall (a template bug, a
        timeout) is worth less; a value every point shares explains nothing and costs nothing."""
        if not obs.failed:
            return
        done = set(obs.measured) | obs.failed
        overall = len(obs.failed) / len(done)
        fails: dict[Feature, int] = defaultdict(int)
        tries: dict[Feature, int] = defaultdict(int)
        for p in done:
            for f in features(p):
                tries[f] += 1
                fails[f] += p in obs.failed
        for f, n in tries.items():
            excess = fails[f] / (n + 1) - overall  # +1: a single failure is weak evidence
            if excess > 0:
                self.penalty[f] = FAIL_WEIGHT * excess

    def value(self, feats: tuple[Feature, ...]) -> float:
        """The correction to add to a point's log predicted fitness."""
        if not self.effect and not self.penalty:
            return 0.0
        return sum(self.effect.get(f, 0.0) - self.penalty.get(f, 0.0) for f in feats)

    def uncertainty(self, feats: tuple[Feature, ...]) -> float:
        """How far the corrected score may still be off: the residual spread, shrinking with the
        measurements of the point's values (zero while the model has been exact)."""
        if not self.spread:
            return 0.0
        return self.spread * sum(1.0 / math.sqrt(self.counts.get(f, 0) + 1) for f in feats) / len(feats)
