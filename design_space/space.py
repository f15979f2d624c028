"""The executable design space of one pattern on one hardware profile: enumeration,
neighbourhoods and restrictions. Pure data; no I/O."""

from __future__ import annotations

import itertools
from typing import Mapping, Optional, Sequence

from design_space.errors import DesignPointError, SpecError
from design_space.hardware import HardwareProfile
from design_space.patterns import Pattern, render_problem
from design_space.point import DIMENSIONS, DesignPoint
from design_space.rules import violations


def dimension_values(pattern: Pattern, restrictions: Optional[Mapping[str, Sequence[str]]] = None) -> dict[str, tuple]:
    """Values per dimension: what the pattern's templates render, narrowed by ``restrictions``."""
    values = {d: tuple(pattern.supported[d]) for d in DIMENSIONS}
    for dim, allowed in (restrictions or {}).items():
        if dim not in values:
            raise SpecError(f"restriction on unknown dimension {dim!r}", f"use one of {', '.join(DIMENSIONS)}")
        keep = tuple(v for v in values[dim] if str(getattr(v, "value", v)) in {str(a) for a in allowed})
        if not keep:
            raise SpecError(
                f"restriction {dim}={list(allowed)} leaves no value the {pattern.name} templates render",
                f"choose among {[getattr(v, 'value', v) for v in values[dim]]}",
            )
        values[dim] = keep
    return values


def valid_points(
    pattern: Pattern, hardware: HardwareProfile, restrictions: Optional[Mapping[str, Sequence[str]]] = None
) -> list[DesignPoint]:
    """Every point of the product that breaks no rule, intrinsic or hardware."""
    values = dimension_values(pattern, restrictions)
    points = []
    for combo in itertools.product(*(values[d] for d in DIMENSIONS)):
        try:
            point = DesignPoint(**dict(zip(DIMENSIONS, combo)))
        except DesignPointError:
            continue
        if not violations(point, hardware) and pattern.excluded(point) is None:
            points.append(point)
    return points


def is_valid(point: DesignPoint, pattern: Pattern, hardware: HardwareProfile) -> bool:
    return (all(getattr(point, d) in pattern.supported[d] for d in DIMENSIONS) and not violations(point, hardware)
            and pattern.excluded(point) is None)


def neighbours(point: DesignPoint, values: Mapping[str, tuple]) -> list[tuple[str, DesignPoint]]:
    """Points one step away along one dimension (ordered dimensions move to adjacent values);
    invalid combinations are skipped. Returns (dimension, point) pairs."""
    out = []
    for dim in DIMENSIONS:
        vals = values[dim]
        cur = getattr(point, dim)
        if dim in ("chunk_bytes", "comm_ctas"):
            i = vals.index(cur) if cur in vals else 0
            options = [vals[j] for j in (i - 1, i + 1) if 0 <= j < len(vals)]
        else:
            options = [v for v in vals if v != cur]
        for v in options:
            try:
                out.append((dim, DesignPoint(**{**point.model_dump(), dim: v})))
            except DesignPointError:
                continue
    return out


def why_not_rendered(point: DesignPoint, pattern: Pattern, hardware: HardwareProfile) -> Optional[str]:
    """Why ``pattern``'s templates cannot render ``point`` on ``hardware`` (None when they can)."""
    broken = violations(point, hardware)
    if broken:
        return "; ".join(f"[{r.name}] {r.reason}" for r in broken)
    return render_problem(pattern.name, pattern.supported, pattern.excluded, point)
