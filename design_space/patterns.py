"""Pattern registry: what each fusion pattern computes, how its ranks' buffers map onto the
device context, its cost for the analytic model, and the template family that renders its
design points into CUDA. Built-in patterns register themselves exactly like plugins."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from design_space.dimensions import CHUNK_BYTES, COMM_CTAS, Backend, Issuer, Placement, SyncScope
from design_space.errors import DesignPointError, SpecError
from design_space.model import WorkloadCost
from design_space.point import DesignPoint
from design_space.spec import DType


@dataclass(frozen=True)
class Pattern:
    name: str
    description: str
    dims: tuple[str, ...]  # order of ctx.dims[]
    inputs: tuple[str, ...]  # order of ctx.in[]
    outputs: tuple[str, ...]  # order of ctx.out[]
    supported: Mapping[str, tuple]  # dimension -> values this family's templates render
    cost: Callable[[Mapping[str, int], int, DType], WorkloadCost]
    dim_problems: Callable[[Mapping[str, int], int], list[str]]  # why dims don't fit a world size
    symm_bytes: Callable[[Mapping[str, int], int, DType], int]
    render: Callable[[DesignPoint], str]
    notes: tuple[str, ...] = field(default=())
    # Why this family renders no template for a point whose values are all supported (a
    # combination that makes no sense for the workload), or None. Shown to users like a rule.
    excluded: Callable[[DesignPoint], Optional[str]] = field(default=lambda point: None)
    # Private scratch one rank needs (ctx.workspace) for a shape; 0 = none.
    workspace_bytes: Callable[[Mapping[str, int], int, DType], int] = field(default=lambda dims, world, dtype: 0)


_PATTERNS: dict[str, Pattern] = {}


def register_pattern(pattern: Pattern) -> None:
    _PATTERNS[pattern.name] = pattern


def get_pattern(name: str) -> Pattern:
    try:
        return _PATTERNS[name]
    except KeyError:
        raise SpecError(
            f"unknown pattern {name!r}", f"use one of: {', '.join(sorted(_PATTERNS)) or '(none registered)'}"
        ) from None


def pattern_names() -> tuple[str, ...]:
    return tuple(sorted(_PATTERNS))


def render_problem(name: str, supported: Mapping[str, tuple], excluded: Callable[[DesignPoint], Optional[str]],
                   point: DesignPoint) -> Optional[str]:
    """Why family ``name`` renders no template for ``point`` (a value it does not render, or its
    exclusion), or None. Hardware rules are the caller's: see ``space.why_not_rendered``."""
    unsupported = [f"{d}={getattr(getattr(point, d), 'value', getattr(point, d))}" for d, values in supported.items()
                   if getattr(point, d) not in values]
    if unsupported:
        return f"the {name} templates do not render {', '.join(unsupported)}"
    why = excluded(point)
    return f"the {name} family excludes {point.key()}: {why}" if why else None


def require_renderable(name: str, supported: Mapping[str, tuple], excluded: Callable[[DesignPoint], Optional[str]],
                       point: DesignPoint) -> None:
    """Raise ``DesignPointError`` unless family ``name`` renders ``point`` (its renderers call this first)."""
    problem = render_problem(name, supported, excluded, point)
    if problem:
        raise DesignPointError(problem, f"pick a point from `cuco space` (design_space.valid_points) for {name}")


def every_value(*, without_backends: tuple[Backend, ...] = ()) -> dict[str, tuple]:
    """``Pattern.supported`` for a family that renders every value of every dimension (but the
    backends that make no sense for its workload)."""
    return {
        "backend": tuple(b for b in Backend if b not in without_backends),
        "placement": tuple(Placement),
        "sync_scope": tuple(SyncScope),
        "issuer": tuple(Issuer),
        "chunk_bytes": CHUNK_BYTES,
        "comm_ctas": COMM_CTAS,
    }
