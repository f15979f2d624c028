"""Launches the code makes, against the launches its design point is charged with.

The model charges each placement a launch count of its own (``model._Phase.launches``: two for a
sequential schedule, one for a persistent kernel, 2 x stages + 1 for a chunked stream pipeline).
Its stages follow the sync scope the emulator saw, and synchronisation the comm API does not carry
(flags in the data, atomics on the signal pad) is invisible to the trace. Code that pipelines in
small chunks but hides its waits would read as global_barrier, whose stream pipeline has one stage,
and be charged three launches for hundreds. So the score counts what the code launched.

The emulator counts host operations per call (kernel launches, stream copies of peer memory,
library collectives) at the small emulation shapes only. ``LaunchSample`` is one run's count; the
count at a target shape comes from their growth with the point's chunk count (the model's own
``chunks`` at each run's shape): with runs at two chunk counts, the line through the busiest run at
the fewest and at the most chunks (its slope never below 0); with one chunk count, its largest
count, unscaled; never fewer than any run made. An evaluated candidate is charged the larger of
this count and its point's own at the target shape: code that launches more than its point pays
for what it launches, and no code is charged fewer launches than its point (the emulation shapes
are too small to show a count that grows past them: a 256K-chunk pipeline moves one chunk there).
``cuco space`` and other scores of a bare point (no code) charge the point's count.

The line is a rough guide at large shapes: a count that stops growing past the emulation shapes (a
cap on chunks) is charged as if it kept growing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from design_space.hardware import HardwareProfile
from design_space.model import ShapeModel, WorkloadCost
from design_space.point import DesignPoint


@dataclass(frozen=True)
class LaunchSample:
    """Host operations one rank issued per call (the busiest rank) in one emulation run."""

    cost: WorkloadCost  # the workload at the run's shape and world
    world: int
    launches: float


@dataclass(frozen=True)
class LaunchFit:
    """The code's launches per call as ``fixed + per_chunk * chunks`` of the point."""

    fixed: float
    per_chunk: float
    least: float  # the most launches any run made: the code never launches fewer at a larger shape

    def at(self, chunks: int) -> float:
        return max(self.least, self.fixed + self.per_chunk * chunks)


def fit(samples: Sequence[LaunchSample], point: DesignPoint, hw: HardwareProfile, dtype: str) -> Optional[LaunchFit]:
    """The code's launch count as a function of the point's chunk count (None: no samples). Runs
    at the largest world only: the target world is larger still, and counts that grow with the
    world grow with the chunks the model gives the point there."""
    if not samples:
        return None
    world = max(s.world for s in samples)
    by_chunks: dict[int, float] = {}
    for s in samples:
        if s.world == world:
            c = ShapeModel(s.cost, s.world, hw, dtype).chunks(point)
            by_chunks[c] = max(by_chunks.get(c, 0.0), s.launches)
    least = max(by_chunks.values())
    lo, hi = min(by_chunks), max(by_chunks)
    if lo == hi:
        return LaunchFit(least, 0.0, least)
    slope = max(0.0, (by_chunks[hi] - by_chunks[lo]) / (hi - lo))
    return LaunchFit(by_chunks[hi] - slope * hi, slope, least)


def launches_at(code: Optional[LaunchFit], target: ShapeModel, point: DesignPoint) -> Optional[float]:
    """Host launches per call charged at ``target``'s shape: the code's when it launches more than
    ``point`` is charged with, else the point's (None: not observed, the point's own)."""
    return None if code is None else max(float(target.launches(point)), code.at(target.chunks(point)))
