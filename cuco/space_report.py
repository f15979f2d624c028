"""The design space of one spec on one hardware profile, as plain data: dimensions with their
docs, what each validity rule and the family's exclusions remove, the valid points, the physical
bound per shape and the best points by their score. ``cuco space`` renders it; ``--json`` prints
it as is. Every time here is an analytic-model estimate, labelled ``simulated``, for code with the
templates' features (a tensor-core tile candidate: ``ASSUMED``); the score is the one every cuco
figure uses (design_space.figures: the geometric mean over the spec's shapes of the speedup)."""

from __future__ import annotations

import itertools
from typing import Any, Optional

from design_space import (
    CHUNK_BYTES, COMM_CTAS, DIMENSION_DOCS, DIMENSIONS, RULES, Backend, DesignPoint, DesignPointError,
    Estimate, HardwareProfile, KernelSpec, Pattern, SpecError, dimension_values, estimate, valid_points, violations,
)
from design_space.code_features import TENSOR_CORE_TYPICAL
from design_space.figures import geomean
from design_space.model import shape_model

SIMULATED = "simulated"
ASSUMED = TENSOR_CORE_TYPICAL  # what the templates' code earns; an evaluated candidate uses its own
# The baseline's figures do not depend on the point; this one breaks no rule on any profile.
_REFERENCE_POINT = dict(backend="host_nccl", placement="sequential", sync_scope="global_barrier", issuer="cta",
                        chunk_bytes=1 << 16, comm_ctas=1)


def _value(v: Any) -> str:
    return str(getattr(v, "value", v))


def value_label(dim: str, v: Any) -> str:
    """A value as design-point keys write it (chunks in KiB)."""
    return f"{v // 1024}K" if dim == "chunk_bytes" else _value(v)


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def raw_point(**values: Any) -> DesignPoint:
    """A point built without validation, so the rules it breaks can be counted instead of raised."""
    fields = DesignPoint.model_fields
    return DesignPoint.model_construct(**{k: fields[k].annotation(v) for k, v in values.items()})


def resolve_shape(spec: KernelSpec, name: Optional[str]):
    if name is None:
        return spec.headline
    for case in spec.shapes:
        if case.name == name:
            return case
    raise SpecError(f"spec {spec.name} has no shape {name!r}",
                    f"use one of: {', '.join(s.name for s in spec.shapes)}")


def check_fits(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, world: int) -> None:
    """Raise ``SpecError`` when the model cannot score the spec at ``world`` on ``hw``."""
    if spec.dtype.value not in hw.peak_flops:
        raise SpecError(f"hardware profile {hw.name} has no peak figure for dtype {spec.dtype.value}",
                        f"use a dtype among {sorted(hw.peak_flops)} or another profile")
    for case in spec.shapes:
        problems = pattern.dim_problems(case.at(world), world)
        if problems:
            shown = f" ({case.shown(world)})" if case.scales else ""
            raise SpecError(f"shape {case.name!r}{shown} does not fit world size {world}: {'; '.join(problems)}",
                            f"pass a --world that divides the shapes (the spec's world sizes: "
                            f"{', '.join(map(str, spec.world_sizes))})")


def dimensions(pattern: Pattern, values: dict[str, tuple]) -> list[dict[str, Any]]:
    """Per dimension: the values the templates render (with docs) and the ones they do not."""
    out = []
    for dim in DIMENSIONS:
        docs = DIMENSION_DOCS.get(dim, {})
        kept = {_value(v) for v in values[dim]}
        every = _all_values(dim)
        out.append({
            "name": dim,
            "values": [{"value": value_label(dim, v), "doc": docs.get(_value(v), "")} for v in values[dim]],
            "not_rendered": [value_label(dim, v) for v in every if _value(v) not in kept],
        })
    return out


def _all_values(dim: str) -> tuple:
    if dim == "chunk_bytes":
        return CHUNK_BYTES
    if dim == "comm_ctas":
        return COMM_CTAS
    return tuple(DesignPoint.model_fields[dim].annotation)


def _product(values: dict[str, tuple]):
    for combo in itertools.product(*(values[d] for d in DIMENSIONS)):
        yield DesignPoint.model_construct(**dict(zip(DIMENSIONS, combo)))


def rule_impacts(values: dict[str, tuple], hw: HardwareProfile) -> tuple[list[dict[str, Any]], list[DesignPoint]]:
    """How many points of the product each rule removes (and how many only it removes), plus the
    points that break no rule."""
    removes = {r.name: 0 for r in RULES}
    alone = {r.name: 0 for r in RULES}
    clean = []
    for point in _product(values):
        broken = violations(point, hw)
        for r in broken:
            removes[r.name] += 1
        if len(broken) == 1:
            alone[broken[0].name] += 1
        if not broken:
            clean.append(point)
    rules = [{"name": r.name, "reason": r.reason, "needs_hardware": r.needs_hardware, "removes": removes[r.name],
              "only_this_rule": alone[r.name]} for r in RULES]
    return rules, clean


def family_exclusions(pattern: Pattern, clean: list[DesignPoint]) -> list[dict[str, Any]]:
    """Points that break no rule but that the family renders no template for, grouped by reason."""
    groups: dict[str, dict[str, Any]] = {}
    for point in clean:
        reason = pattern.excluded(point)
        if reason is not None:
            g = groups.setdefault(reason, {"reason": reason, "count": 0, "example": point.key()})
            g["count"] += 1
    return sorted(groups.values(), key=lambda g: -g["count"])


def backend_counts(pattern: Pattern, values: dict[str, tuple], hw: HardwareProfile,
                   valid: list[DesignPoint]) -> list[dict[str, Any]]:
    """Valid points per backend; a rendered backend with none names the rules that removed it."""
    out = []
    for backend in Backend:
        count = sum(p.backend is backend for p in valid)
        row: dict[str, Any] = {"backend": backend.value, "rendered": backend in values["backend"], "count": count,
                               "removed_by": []}
        if row["rendered"] and count == 0:
            row["removed_by"] = _culprits(_product({**values, "backend": (backend,)}), hw)
        out.append(row)
    return out


def _culprits(points, hw: HardwareProfile) -> list[str]:
    """The rules to blame for removing all of ``points``: those every point breaks, else those
    that are some point's only fault (not every rule that happens to fire somewhere)."""
    broken = [{r.name for r in violations(p, hw)} for p in points]
    every = set.intersection(*broken) if broken else set()
    if every:
        return sorted(every)
    alone = set().union(*(b for b in broken if len(b) == 1))
    return sorted(alone or set().union(*broken))


def _baseline_point() -> DesignPoint:
    return raw_point(**_REFERENCE_POINT)


def ranked(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, world: int, case,
           valid: list[DesignPoint]) -> tuple[Estimate, list[tuple[float, str]]]:
    """The shape's bound, baseline and ceiling, and every valid point's (simulated seconds, key),
    fastest first. Each point is simulated once: the bound and baseline do not depend on it."""
    model = shape_model(pattern.cost(case.at(world), world, spec.dtype), world, hw, spec.dtype.value, ASSUMED)
    return model.estimate(_baseline_point()), sorted((model.simulate(p), p.key()) for p in valid)


def shape_bounds(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, world: int,
                 valid: list[DesignPoint]) -> list[dict[str, Any]]:
    """Per shape: T_comp, T_comm, the bound, the host-driven baseline, the ceiling no candidate's
    speedup may pass, and the best valid point on this shape alone."""
    rows = []
    for case in spec.shapes:
        est, order = ranked(spec, pattern, hw, world, case, valid)
        best_t, best = order[0] if order else (None, None)
        rows.append({
            "shape": case.name, "dims": case.at(world),
            **({"dims_written": dict(case.dims)} if case.scales else {}),  # "64*n": the spec's own words
            "t_comp_us": _us(est.t_comp), "t_comm_us": _us(est.t_comm), "bound_us": _us(est.bound),
            "bound_by": "compute" if est.t_comp >= est.t_comm else "communication",
            "baseline_us": _us(est.baseline), "ceiling": _sig(est.ceiling),
            "best_point": best,
            "best_simulated_us": _us(best_t) if best_t else None,
            "best_speedup": _sig(est.baseline / best_t) if best_t else None,
        })
    return rows


def _sig(x: Optional[float]) -> Optional[float]:
    return None if x is None else float(f"{x:.4g}")


def point_timings(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, world: int,
                  point: DesignPoint) -> list[dict[str, Any]]:
    """``point``'s simulated time per shape with the bound and baseline it is scored against."""
    rows = []
    for case in spec.shapes:
        est = estimate(pattern.cost(case.at(world), world, spec.dtype), point, world, hw, spec.dtype.value,
                       features=ASSUMED)
        rows.append({"shape": case.name, "simulated_us": _us(est.simulated), "bound_us": _us(est.bound),
                     "baseline_us": _us(est.baseline), "speedup": _sig(est.baseline / est.simulated),
                     "sol": _sig(est.bound / est.simulated)})
    return rows


def top_points(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, world: int, shape,
               valid: list[DesignPoint], k: int) -> list[dict[str, Any]]:
    """The ``k`` best points by score (geometric mean over the spec's shapes of the speedup), with
    the headline ``shape``'s time, speedup and SOL beside it."""
    models = {c.name: shape_model(pattern.cost(c.at(world), world, spec.dtype), world, hw, spec.dtype.value, ASSUMED)
              for c in spec.shapes}
    bases = {name: m.estimate(_baseline_point()) for name, m in models.items()}
    scored = []
    for p in valid:
        times = {name: m.simulate(p) for name, m in models.items()}
        score = geomean([bases[n].baseline / t for n, t in times.items() if t > 0])
        sol = geomean([bases[n].bound / t for n, t in times.items() if t > 0])
        scored.append((-(score or 0.0), p.key(), score, sol, times[shape.name]))
    scored.sort()
    head = bases[shape.name]
    return [{"rank": i, "point": key, "score": _sig(score), "sol": _sig(sol), "shape": shape.name,
             "simulated_us": _us(t), "speedup": _sig(head.baseline / t), "shape_sol": _sig(head.bound / t)}
            for i, (_, key, score, sol, t) in enumerate(scored[:k], 1)]


def space_report(spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, world: int,
                 shape_name: Optional[str] = None, top: int = 10) -> dict[str, Any]:
    """Everything ``cuco space`` shows, as JSON-ready data."""
    check_fits(spec, pattern, hw, world)
    shape = resolve_shape(spec, shape_name)
    values = dimension_values(pattern, spec.restrictions)
    rules, clean = rule_impacts(values, hw)
    valid = valid_points(pattern, hw, spec.restrictions)
    product = 1
    for d in DIMENSIONS:
        product *= len(values[d])
    return {
        "spec": spec.name, "pattern": pattern.name, "description": pattern.description,
        "hardware": hw.name, "world": world, "dtype": spec.dtype.value, "timing_source": SIMULATED,
        "compute_assumption": ASSUMED.source,
        "restrictions": {k: list(v) for k, v in spec.restrictions.items()},
        "dimensions": dimensions(pattern, values),
        "product": product,
        "rules": rules,
        "removed_by_rules": product - len(clean),
        "family_exclusions": family_exclusions(pattern, clean),
        "valid": len(valid),
        "valid_per_backend": backend_counts(pattern, values, hw, valid),
        "shapes": shape_bounds(spec, pattern, hw, world, valid),
        "top": {"shape": shape.name, "points": top_points(spec, pattern, hw, world, shape, valid, top)},
    }


def parse_any_point(key: str) -> DesignPoint:
    """The point ``key`` names, even when it breaks rules (so all of them can be named);
    unparsable keys and unknown values raise ``DesignPointError`` listing the valid values."""
    try:
        return DesignPoint.parse_key(key)
    except DesignPointError as e:
        if not e.violations:
            raise
    parts = key.strip().split("/")
    return raw_point(backend=parts[0], placement=parts[1], sync_scope=parts[2], issuer=parts[3],
                     chunk_bytes=int(parts[4][:-1]) * 1024, comm_ctas=int(parts[5]))


def point_problems(point: DesignPoint, pattern: Pattern, hw: HardwareProfile,
                   restrictions: dict[str, tuple[str, ...]]) -> tuple[list[str], list[str]]:
    """(problems, rule names): every rule ``point`` breaks on ``hw``, every value the family does
    not render or the spec restricts away, and the family's exclusion reason."""
    broken = violations(point, hw)
    problems = [f"[{r.name}] {r.reason}" for r in broken]
    allowed = dimension_values(pattern, restrictions)
    rendered = True
    for dim in DIMENSIONS:
        v = getattr(point, dim)
        if v not in pattern.supported[dim]:
            rendered = False
            problems.append(f"[not_rendered] the {pattern.name} templates do not render {dim}={value_label(dim, v)} "
                            f"(they render {', '.join(value_label(dim, x) for x in pattern.supported[dim])})")
        elif v not in allowed[dim]:
            problems.append(f"[restricted] the spec restricts {dim} to "
                            f"{', '.join(value_label(dim, x) for x in allowed[dim])}")
    if rendered:
        reason = pattern.excluded(point)
        if reason is not None:
            problems.append(f"[family_exclusion] {reason}")
    return problems, [r.name for r in broken]


def point_report(key: str, spec: KernelSpec, pattern: Pattern, hw: HardwareProfile, world: int) -> dict[str, Any]:
    """A valid point's simulated estimates per shape; raises ``DesignPointError`` naming every
    rule it breaks (or why the family refuses it)."""
    check_fits(spec, pattern, hw, world)
    point = parse_any_point(key)
    problems, names = point_problems(point, pattern, hw, spec.restrictions)
    if problems:
        raise DesignPointError(f"design point {point.key()} is refused for {pattern.name} on {hw.name}: "
                               + "; ".join(problems),
                               "change the named dimensions; `cuco space` lists the valid points",
                               tuple(names))
    return {"spec": spec.name, "pattern": pattern.name, "hardware": hw.name, "world": world, "point": point.key(),
            "valid": True, "timing_source": SIMULATED, "shapes": point_timings(spec, pattern, hw, world, point)}
