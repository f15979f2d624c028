"""``KernelSpec``: what a user asks cuco to build, with its reference and shape sweep."""

from __future__ import annotations

import re
from enum import Enum
from typing import Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from design_space import dim_expr
from design_space.errors import SpecError

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class DType(str, Enum):
    BF16 = "bf16"
    FP16 = "fp16"
    FP32 = "fp32"

    @property
    def itemsize(self) -> int:
        return 4 if self is DType.FP32 else 2

    @property
    def code(self) -> int:
        """The value of ``CUCO_DTYPE`` in generated code (see evaluator/runtime/cuco_ctx.h)."""
        return {DType.FP32: 0, DType.FP16: 1, DType.BF16: 2}[self]


class Tolerance(BaseModel):
    model_config = _FROZEN
    atol: float = Field(gt=0)
    rtol: float = Field(ge=0)


DEFAULT_TOLERANCES: dict[DType, Tolerance] = {
    DType.FP32: Tolerance(atol=1e-4, rtol=1e-4),
    DType.FP16: Tolerance(atol=1e-2, rtol=1e-2),
    DType.BF16: Tolerance(atol=2e-2, rtol=2e-2),
}


class ShapeCase(BaseModel):
    """One point of the shape sweep: named global problem dimensions (pattern-defined).

    A dim is an int, or an integer expression of the world size ``n`` written as a string
    (``"64*n"``: each rank holds 64; ``"n"``: one per rank; design_space/dim_expr.py). ``at(world)``
    gives the ints a pattern reads; ``dims`` stays the one field, so an int-only shape's repr,
    equality and dump are what they were (a verdict ledger keys on the repr)."""

    model_config = _FROZEN
    name: str = Field(pattern=r"^[\w.-]+$")
    dims: dict[str, Union[int, str]]

    @field_validator("dims")
    @classmethod
    def _positive(cls, v: dict[str, Union[int, str]]) -> dict[str, Union[int, str]]:
        bad = [k for k, x in v.items() if isinstance(x, int) and x <= 0]
        if bad:
            raise ValueError(f"dimensions must be positive, got {', '.join(f'{k}={v[k]}' for k in bad)}")
        if not dim_expr.scales(v):
            return v
        try:  # pydantic reports ValueError; the SpecError's text carries its fix
            return {k: dim_expr.checked(k, x) for k, x in v.items()}
        except SpecError as e:
            raise ValueError(str(e)) from None

    def at(self, world: int) -> dict[str, int]:
        """The global dims at ``world`` ranks."""
        return dim_expr.resolve(self.dims, world)

    def resolved(self, world: int) -> "ShapeCase":
        """This shape at ``world`` ranks, every dim an int (itself when none depends on the world)."""
        return self if not self.scales else ShapeCase(name=self.name, dims=self.at(world))

    @property
    def scales(self) -> bool:
        """Whether some dim grows with the world size."""
        return dim_expr.scales(self.dims)

    def shown(self, world: Optional[int] = None) -> str:
        """``m=64, k=64*n`` as written; with ``world``: ``m=64, k=256 (64*n)``."""
        return dim_expr.shown(self.dims, world)


class KernelSpec(BaseModel):
    """What a user asks cuco to build (frozen; unknown fields are refused).

    - ``name``: the run's default name (letters, digits, ``_``, ``-``).
    - ``pattern``: the workload family (``design_space.pattern_names()``), which fixes the inputs'
      and outputs' names and order (``get_pattern(name).inputs`` / ``.outputs``) and its dims.
    - ``shapes``: the sweep the model scores (global dims per ``ShapeCase``); ``primary_shape``
      the headline one (default: the last).
    - ``emulation_shapes``: tiny shapes the CPU emulator runs (a few dozen per dim), at
      ``emulation_world_sizes`` ranks; ``world_sizes``: what is scored (the largest is the target).
    - ``dtypes``: candidates are built and emulated in the first.
    - ``reference`` / ``inputs``: ``"module:function"`` found on ``search_path`` (a spec folder
      adds its own): ``reference(inputs: dict, dims: dict, group) -> dict`` with torch +
      torch.distributed (it runs on gloo), and ``make_inputs(dims, rank, world, dtype, gen) ->
      dict`` building one rank's inputs. `cuco init --from-reference` writes both for a workload in
      other forms (KernelBench ``Model``/``get_inputs``, ``solution(*inputs)``, a plain function).
    - ``tolerances``: per dtype, an output element passes when ``|out - ref| <= atol + rtol * |ref|``;
      each output's own allowance may be larger where its arithmetic needs it (a calibration
      against a float64 run of the reference, and the rounding of a reduction's partials:
      evaluator/tolerance.py); ``output_tolerances`` (by output name) is used exactly as given.
    - ``hardware``: the profile the model scores for (``cuco space --hardware`` lists them).
    - ``seed_kernel``: a host-driven ``.cu`` the fast path starts from; ``restrictions``: dimension
      values the search keeps to (e.g. ``{"backend": ("lsa",)}``).
    """

    model_config = _FROZEN

    name: str = Field(pattern=r"^[A-Za-z_][\w-]*$")
    pattern: str
    description: str = ""
    world_sizes: tuple[int, ...] = (2, 4, 8)
    shapes: tuple[ShapeCase, ...]
    primary_shape: Optional[str] = None  # headline shape; default: the last (largest) one
    emulation_shapes: tuple[ShapeCase, ...]
    emulation_world_sizes: tuple[int, ...] = (2, 4)
    dtypes: tuple[DType, ...] = (DType.BF16,)
    reference: str  # "module:function" (torch + torch.distributed)
    inputs: str  # "module:function" building one rank's inputs
    search_path: tuple[str, ...] = ()  # folders put on sys.path to import reference/inputs
    tolerances: dict[DType, Tolerance] = Field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    # by output name: used as given, instead of the dtype's tolerance and its calibration
    output_tolerances: dict[str, Tolerance] = Field(default_factory=dict)
    hardware: str = "H100"
    seed_kernel: Optional[str] = None  # host-driven .cu for the fast path
    restrictions: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    @field_validator("reference", "inputs")
    @classmethod
    def _callable_ref(cls, v: str) -> str:
        if not _CALLABLE.match(v):
            raise ValueError(f"expected 'module:function', got {v!r}")
        return v

    @field_validator("world_sizes", "emulation_world_sizes")
    @classmethod
    def _worlds(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(w < 1 or w > 32 for w in v):
            raise ValueError(f"world sizes must be 1..32 and non-empty, got {v}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "KernelSpec":
        if not self.shapes or not self.emulation_shapes:
            raise ValueError("shapes and emulation_shapes must each list at least one ShapeCase")
        if not self.dtypes:
            raise ValueError("dtypes must list at least one dtype")
        names = [s.name for s in self.shapes]
        if len(set(names)) != len(names):
            raise ValueError(f"shape names must be unique, got {names}")
        if self.primary_shape is not None and self.primary_shape not in names:
            raise ValueError(f"primary_shape {self.primary_shape!r} is not one of {names}")
        missing = [d.value for d in self.dtypes if d not in self.tolerances]
        if missing:
            raise ValueError(f"no tolerance for dtype(s) {missing}")
        return self

    @property
    def dtype(self) -> DType:
        """The dtype candidates are built, emulated and timed in."""
        return self.dtypes[0]

    @property
    def headline(self) -> ShapeCase:
        if self.primary_shape is None:
            return self.shapes[-1]
        return next(s for s in self.shapes if s.name == self.primary_shape)

    @property
    def target_world(self) -> int:
        """The world size the model scores (the largest requested)."""
        return max(self.world_sizes)
