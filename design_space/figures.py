"""The one definition of every figure cuco shows about a candidate's times.

- per-shape speedup = baseline time / candidate time (the host-driven baseline of the same
  shape, timed or simulated the same way as the candidate);
- per-shape SOL fraction = physical bound / candidate time (1.0 = at the bound);
- the candidate's score, used to rank it everywhere (search, leaderboard, ``cuco space``,
  JSON): the geometric mean over the spec's shapes of the per-shape speedup. Every shape
  counts the same whatever its absolute time, so a decode shape is not drowned by a prefill
  one, and a 2x win on one shape and a 2x loss on another cancel. The SOL column is the
  geometric mean of the per-shape SOL fractions, for the same reasons.
- the headline: one named shape's figures (the spec's ``primary_shape``), shown beside the
  score, never instead of it.

A score needs a positive time for every shape it is asked about: a candidate missing a shape,
or with a time <= 0, has no score (None), rather than a score over the shapes it happened to
have. Measured and simulated times are never mixed in one score.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from pydantic import BaseModel, ConfigDict

from design_space.evaluation import Timing, TimingSource

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ShapeFigures(BaseModel):
    """One shape's figures; ``speedup`` and ``sol`` are None when the time is not positive."""

    model_config = _FROZEN
    shape: str
    world: int
    source: TimingSource
    seconds: float
    speedup: Optional[float]
    sol: Optional[float]


class Score(BaseModel):
    """A candidate's figures over its shapes: what ranks it, and the shapes behind it."""

    model_config = _FROZEN
    speedup: Optional[float]  # geometric mean of per-shape speedups: THE ranking score
    sol: Optional[float]  # geometric mean of per-shape SOL fractions
    source: Optional[TimingSource]
    shapes: tuple[ShapeFigures, ...]
    missing: tuple[str, ...] = ()  # expected shapes without a timing
    headline: Optional[ShapeFigures] = None


def speedup(t: Timing) -> Optional[float]:
    """Baseline / candidate time of one shape."""
    return t.baseline_seconds / t.seconds if t.seconds > 0 and t.baseline_seconds > 0 else None


def sol_fraction(t: Timing) -> Optional[float]:
    """Physical bound / candidate time of one shape."""
    return t.bound_seconds / t.seconds if t.seconds > 0 and t.bound_seconds > 0 else None


def shape_figures(t: Timing) -> ShapeFigures:
    return ShapeFigures(shape=t.shape, world=t.world, source=t.source, seconds=t.seconds, speedup=speedup(t),
                        sol=sol_fraction(t))


def geomean(values: Sequence[Optional[float]]) -> Optional[float]:
    """Geometric mean; None when empty or when any value is missing or not positive."""
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def headline(timings: Sequence[Timing], shape: Optional[str]) -> Optional[ShapeFigures]:
    """The figures of the shape named ``shape`` (the spec's primary shape), or None."""
    t = next((t for t in timings if t.shape == shape), None)
    return shape_figures(t) if t is not None else None


def score(timings: Sequence[Timing], expected: Sequence[str] = (), headline_shape: Optional[str] = None) -> Score:
    """The candidate's score over ``timings``; with ``expected`` (the spec's shape names) a shape
    without a timing leaves the score None. Raises ``ValueError`` on mixed timing sources."""
    sources = {t.source for t in timings}
    if len(sources) > 1:
        raise ValueError("measured and simulated timings cannot be scored together")
    shapes = tuple(shape_figures(t) for t in timings)
    have = {t.shape for t in timings}
    missing = tuple(s for s in expected if s not in have)
    complete = not missing
    return Score(speedup=geomean([s.speedup for s in shapes]) if complete else None,
                 sol=geomean([s.sol for s in shapes]) if complete else None,
                 source=next(iter(sources), None), shapes=shapes, missing=missing,
                 headline=headline(timings, headline_shape))
