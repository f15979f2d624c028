"""The emulation shapes an evaluation gets: drawn around the spec's, so a candidate cannot be
written for the shapes it will be checked at.

For every emulation shape of the spec, a pool holds the shape itself and ``variants`` shapes drawn
from a seeded distribution around it (each varied dimension between half and 1.25 times its
value, ragged sizes included, every draw valid at every emulation world size; a dim written as
``a*n + b`` of the world size keeps growing with it and draws its per-rank ``a`` the same way).
Each evaluation picks one shape per pool with a random generator seeded by the candidate, so
different candidates meet different shapes and one candidate always meets the same ones (a verdict
can be reproduced); the spec's own shapes are the centre of the distribution, not shapes a
candidate is checked at.
The pool is drawn once per run (its seed) because every shape needs a reference run on gloo.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Mapping, Sequence

from design_space import dim_expr
from design_space.dim_expr import DimValue
from design_space.patterns import Pattern
from design_space.spec import ShapeCase

_TRIES = 400


def _seeded(*parts: object) -> random.Random:
    return random.Random(hashlib.sha256(":".join(map(str, parts)).encode()).digest())


def _fits(pattern: Pattern, dims: Mapping[str, DimValue], worlds: Sequence[int]) -> bool:
    return all(not pattern.dim_problems(dim_expr.resolve(dims, w), w) for w in worlds)


def _draw(rng: random.Random, value: int, step: int) -> int:
    lo, hi = max(1, math.ceil(value / 2)), max(1, value + value // 4)
    if value % step == 0 and value >= step:  # a dimension that must divide by the world keeps doing so
        return step * rng.randint(max(1, math.ceil(lo / step)), max(1, hi // step))
    return rng.randint(lo, hi)


def _varied(value: DimValue) -> bool:
    """A fixed dim above 1 varies; a dim of the world size ``a*n + b`` varies its per-rank ``a``
    when ``a > 1``. ``n`` itself (one per rank: an MoE's expert per rank) and non-linear ones
    (``n*n``, ``n//2``) are the workload's structure, not a size, and stay as written."""
    if isinstance(value, int):
        return value > 1
    line = dim_expr.linear(value)
    return line is not None and line[0] > 1


def _drawn(rng: random.Random, value: DimValue, step: int) -> DimValue:
    if isinstance(value, int):
        return _draw(rng, value, step)
    a, b = dim_expr.linear(value)  # type: ignore[misc]
    # the per-rank coefficient moves (a candidate cannot be written for 64 per rank) while the dim
    # keeps growing with the world, as the workload's does
    return dim_expr.scaled(_draw(rng, a, step), b)


def variants(pattern: Pattern, base: ShapeCase, worlds: Sequence[int], count: int, seed: int) -> tuple[ShapeCase, ...]:
    """``count`` shapes drawn around ``base`` (fewer when the pattern's rules leave no room)."""
    varied = [d for d in (pattern.varied_dims or pattern.dims) if d in base.dims and _varied(base.dims[d])]
    if not varied or count <= 0:
        return ()
    step = math.lcm(*worlds) if worlds else 1
    rng = _seeded(seed, pattern.name, base.name, sorted(base.dims.items()))
    seen = {tuple(sorted(base.dims.items()))}
    out: list[ShapeCase] = []
    for _ in range(_TRIES):
        if len(out) == count:
            break
        dims = dict(base.dims)
        for d in varied:
            dims[d] = _drawn(rng, base.dims[d], step)
        key = tuple(sorted(dims.items()))
        if key in seen or not _fits(pattern, dims, worlds):
            continue
        seen.add(key)
        out.append(ShapeCase(name=f"{base.name}.d{len(out) + 1}", dims=dims))
    return tuple(out)


def shape_pool(pattern: Pattern, shapes: Sequence[ShapeCase], worlds: Sequence[int], count: int,
               seed: int) -> dict[str, tuple[ShapeCase, ...]]:
    """Per base shape name: the base itself first, then its drawn variants."""
    return {s.name: (s, *variants(pattern, s, worlds, count, seed)) for s in shapes}


def pick(pool: Mapping[str, Sequence[ShapeCase]], key: str) -> tuple[ShapeCase, ...]:
    """One drawn shape from every pool, chosen by ``key`` (e.g. the candidate's content hash); the
    spec's own shape only where nothing could be drawn around it."""
    rng = _seeded("pick", key)
    return tuple(rng.choice(list(options[1:] or options)) for _, options in sorted(pool.items()))
