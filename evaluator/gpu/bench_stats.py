"""The pure arithmetic of the bench stage, apart from any GPU so it is tested on a CPU.

- an iteration's time is the slowest rank's (every rank must finish before the op has happened);
- the reported time is the median over iterations, with p10/p90 and the IQR as its spread;
- inputs rotate over several copies when one copy fits in L2, so timed iterations read cold data;
- SOL fraction = model bound / measured time; above SOL_SUSPECT the result is flagged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

SOL_SUSPECT = 1.05  # same threshold as the CPU cascade: faster than physics is a bug or a hack
MAX_INPUT_SETS = 16


@dataclass(frozen=True)
class TimeSummary:
    median: float
    p10: float
    p90: float
    iqr: float
    n: int

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: the relative noise of the measurement."""
        return (self.p90 - self.p10) / self.median if self.median > 0 else 0.0


def max_over_ranks(per_rank: Sequence[Sequence[float]]) -> list[float]:
    """Per-iteration time: ``per_rank[r][i]`` is rank r's time of iteration i."""
    if not per_rank:
        return []
    lengths = {len(r) for r in per_rank}
    if len(lengths) != 1:
        raise ValueError(f"every rank must report the same number of iterations, got {sorted(lengths)}")
    return [max(col) for col in zip(*per_rank)]


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method) of a non-empty sequence."""
    if not values:
        raise ValueError("quantile of no values")
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(times: Sequence[float]) -> TimeSummary:
    return TimeSummary(median=quantile(times, 0.5), p10=quantile(times, 0.1), p90=quantile(times, 0.9),
                       iqr=quantile(times, 0.75) - quantile(times, 0.25), n=len(times))


def input_sets(working_set_bytes: int, l2_bytes: int, *, memory_budget_bytes: int,
               max_sets: int = MAX_INPUT_SETS) -> int:
    """How many copies of the inputs to rotate through: enough that together they span at least
    twice the L2 (so an iteration's inputs were evicted since their last use), 1 when one copy
    already exceeds L2, never more than the memory budget or ``max_sets`` allow."""
    if working_set_bytes <= 0 or working_set_bytes >= l2_bytes:
        return 1
    wanted = math.ceil(2 * l2_bytes / working_set_bytes)
    affordable = max(1, memory_budget_bytes // working_set_bytes)
    return max(1, min(wanted, affordable, max_sets))


def sol_fraction(bound_s: float, measured_s: float) -> float:
    return bound_s / measured_s if measured_s > 0 else 0.0


def speedup(baseline_s: float, measured_s: float) -> float:
    return baseline_s / measured_s if measured_s > 0 else 0.0


def bench_flags(sol: float, summary: TimeSummary, *, noisy_spread: float = 0.25) -> list[str]:
    flags = []
    if sol > SOL_SUSPECT:
        flags.append(f"beats_physical_bound: SOL {sol:.2f} > {SOL_SUSPECT} (suspected hack or bug)")
    if summary.spread > noisy_spread:
        flags.append(f"noisy_timing: p10-p90 spread {summary.spread:.0%} of the median")
    return flags
