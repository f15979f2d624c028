"""Shared helpers of the web views: JSON-ready values, links, and one row's figures.

A view's dict is rendered by its template and returned as JSON by its twin, so it must hold only
JSON values: ``plain`` turns datetimes, enums, tuples and non-finite floats (a NaN error is
ordinary data) into them, the way the candidates database stores them.
"""

from __future__ import annotations

import math
from datetime import datetime
from enum import Enum
from typing import Any, Optional
from urllib.parse import quote, urlencode

from design_space import Evaluation, KernelSpec, StoreError, Tier
from design_space.figures import geomean
from design_space.figures import sol_fraction as shape_sol
from design_space.figures import speedup as shape_speedup


class NotFound(StoreError):
    """A run, candidate or page that is not in the database: the page answers 404 with the fix."""


def plain(value: Any) -> Any:
    """``value`` with only JSON types: str, int, float (finite), bool, None, list, dict."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if hasattr(value, "model_dump"):
        return plain(value.model_dump(mode="python"))
    return value


def run_url(run: str, page: str = "", query: Optional[dict[str, Any]] = None) -> str:
    """The URL of a run's page; the name is one percent-encoded path segment (names may hold '/')."""
    url = f"/runs/{quote(run, safe='')}" + (f"/{page}" if page else "")
    return url + ("?" + urlencode(query) if query else "")


def candidate_url(cid: str) -> str:
    return f"/candidates/{quote(cid, safe='')}"


def rounded(x: Optional[float]) -> Optional[float]:
    """Three significant figures (a 0.0172x scalar candidate must not show as 0.02)."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.3g}")


def spec_of(spec_json: str) -> Optional[KernelSpec]:
    """The run's spec, or None when it cannot be read (written by another cuco version)."""
    try:
        return KernelSpec.model_validate_json(spec_json)
    except ValueError:
        return None


def figures(ev: Optional[Evaluation], spec: Optional[KernelSpec]) -> dict[str, Any]:
    """The score (geometric means over shapes, design_space.figures) and the headline shape's
    figures of one evaluation; computed from figures' per-shape functions without building its
    models, because a page computes this for every row."""
    timings = ev.timings if ev is not None else ()
    sources = {t.source for t in timings}
    if not timings or len(sources) > 1:  # mixed sources are never stored, but a row must still render
        return {"speedup": None, "sol": None, "timing_source": None, "headline_shape": None,
                "headline_us": None, "headline_speedup": None, "headline_sol": None}
    head = next((t for t in timings if spec is not None and t.shape == spec.headline.name), None)
    return {"speedup": rounded(geomean([shape_speedup(t) for t in timings])),
            "sol": rounded(geomean([shape_sol(t) for t in timings])),
            "timing_source": next(iter(sources)).value,
            "headline_shape": head.shape if head else None,
            "headline_us": rounded(head.seconds * 1e6) if head else None,
            "headline_speedup": rounded(shape_speedup(head)) if head else None,
            "headline_sol": rounded(shape_sol(head)) if head else None}


# Flags every CPU evaluation carries (sandbox facts, what emulation cannot check, the compute
# path): on the candidate page, not in every leaderboard row, where they would hide the rare ones
# (e.g. beats_physical_bound) that need a reader's attention.
ROUTINE_FLAGS = ("network_isolated", "sandbox:", "memory_ordering_unchecked", "compute:")


def notable_flags(flags: list[str]) -> list[str]:
    return [f for f in flags if not f.startswith(ROUTINE_FLAGS)]


def evaluation_summary(ev: Optional[Evaluation]) -> dict[str, Any]:
    """Status, stage, reason, emulated worlds, flags and observed point of the latest evaluation."""
    if ev is None:
        return {"status": "unevaluated", "stage": None, "reason": "", "emulated_worlds": [], "flags": [],
                "notable_flags": [], "observed_point": None, "compute": None}
    return {"status": ev.status.value, "stage": ev.stage.value, "reason": ev.reason,
            "emulated_worlds": list(ev.checked_worlds(Tier.EMULATED)), "flags": list(ev.flags),
            "notable_flags": notable_flags(list(ev.flags)), "observed_point": ev.observed_point,
            "compute": ev.features.kind if ev.features else None}


def duration(seconds: Optional[float]) -> str:
    """``3h 05m``, ``4m 10s``, ``12.5s``: wall times at a glance."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h {m:02d}m" if h else f"{m}m {s:02d}s"
