"""Pattern registry: what each fusion pattern computes, how its ranks' buffers map onto the
device context and its cost for the analytic model; and the renderer registry, which the kernel
templates (the ``kernels`` package, or a plugin's own) fill. Built-in patterns and renderers
register themselves exactly like plugins."""

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
    notes: tuple[str, ...] = field(default=())
    # Why this family renders no template for a point whose values are all supported (a
    # combination that makes no sense for the workload), or None. Shown to users like a rule.
    excluded: Callable[[DesignPoint], Optional[str]] = field(default=lambda point: None)
    # Private scratch one rank needs (ctx.workspace) for a shape; 0 = none.
    workspace_bytes: Callable[[Mapping[str, int], int, DType], int] = field(default=lambda dims, world, dtype: 0)
    # Sizes the evaluator may vary around the spec's emulation shapes (None: every dim); flags and
    # enumerations (a mask kind, an on/off epilogue, routing parameters) stay as the spec gives them.
    varied_dims: Optional[tuple[str, ...]] = None
    # Flags added to a family after specs were written without them: a shape may leave such a dim
    # out, meaning its first value (off), so those specs keep their text and their runs' identity.
    optional_flags: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # Inputs only an optional flag's "on" value reads: a builder may leave them out (the kernel
    # then gets an empty buffer).
    optional_inputs: tuple[str, ...] = ()

    def full_dims(self, dims: Mapping) -> dict:
        """``dims`` with every optional flag it leaves out at the value leaving it out means."""
        return {**dims, **{d: values[0] for d, values in self.optional_flags.items() if d not in dims}}


    def render(self, point: DesignPoint) -> str:
        """CUDA source of ``point`` from this pattern's registered kernel templates."""
        try:
            renderer = _RENDERERS[self.name]
        except KeyError:
            raise SpecError(f"no kernel templates are registered for pattern {self.name!r}",
                            "import kernels (cuco does) or call design_space.register_renderer(name, render) "
                            "for a plugin pattern") from None
        return renderer(point)


_PATTERNS: dict[str, Pattern] = {}
_RENDERERS: dict[str, Callable[[DesignPoint], str]] = {}


def register_pattern(pattern: Pattern, render: Optional[Callable[[DesignPoint], str]] = None) -> None:
    """Add ``pattern``; ``render`` (a plugin's templates) may come along or later via register_renderer."""
    _PATTERNS[pattern.name] = pattern
    if render is not None:
        register_renderer(pattern.name, render)


def unregister_pattern(name: str) -> None:
    """Drop pattern ``name`` and its renderer (a traced spec registered in-process, then done with)."""
    _PATTERNS.pop(name, None)
    _RENDERERS.pop(name, None)


def register_renderer(name: str, render: Callable[[DesignPoint], str]) -> None:
    """The function that renders design points of pattern ``name`` into CUDA."""
    _RENDERERS[name] = render


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
