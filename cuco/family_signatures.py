"""What shape each input of a workload family has, as monomials of its dims and the world size,
read off the family's canonical input builder (examples/<family>/reference.py), and fitting a
user's per-rank tensors to them: which user input is which family input, and the dims that make
every shape agree; or, when nothing fits, what differs (a sharded axis, a transpose, a layout, an
input too many or too few), said in the family's own terms (``A [M/n, K]``).

Pure Python over shapes (torch only to call the builder, in the caller's process).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence

MAX_PERMUTATIONS = 5040  # 7 inputs


@dataclass(frozen=True)
class Axis:
    """length = coef * prod(dims[d] for d in dims) (coef carries the 1/world of a sharded axis)."""

    coef: Fraction
    dims: tuple[str, ...]

    def length(self, dims: dict) -> Optional[int]:
        value = self.coef
        for d in self.dims:
            if d not in dims:
                return None
            value *= dims[d]
        return int(value) if value.denominator == 1 else None

    def label(self, world: int) -> str:
        if not self.dims:
            return str(self.coef)
        name = "·".join(d.upper() for d in self.dims)
        scale = self.coef * world  # the world's share shows as /n
        if scale == 1:
            return f"{name}/n"
        return name if self.coef == 1 else f"{self.coef}·{name}"


@dataclass(frozen=True)
class InputSignature:
    name: str
    axes: Optional[tuple[Axis, ...]]  # None: not a tensor (a scalar)
    dtype_kind: str  # float | int | bool | scalar


@dataclass(frozen=True)
class Signature:
    family: str
    world: int
    inputs: tuple[InputSignature, ...]
    base_dims: dict = field(default_factory=dict)
    sizes: tuple[str, ...] = ()  # the dims that set some input's length (the others are flags)

    def shown(self, name: str) -> str:
        sig = next(s for s in self.inputs if s.name == name)
        if sig.axes is None:
            return f"{name} (scalar)"
        return f"{name} [{', '.join(a.label(self.world) for a in sig.axes)}]"


def kind_of(value: Any) -> str:
    dtype = str(getattr(value, "dtype", ""))
    if not hasattr(value, "shape"):
        return "scalar"
    if "bool" in dtype:
        return "bool"
    return "int" if "int" in dtype else "float"


def infer_signature(family: str, builder: Callable[[dict], dict], base: dict, dims: Sequence[str],
                    world: int) -> Signature:
    """Each input's axes from the builder at ``base`` and with each dim doubled in turn (a dim whose
    doubling changes no shape, or that the builder refuses doubled, is a flag, not a size)."""
    at_base = builder(dict(base))
    doubled = {}
    for d in dims:
        try:
            grown = builder({**base, d: base[d] * 2})
        except Exception:  # noqa: BLE001 -- e.g. a mask kind with no meaning at twice its value
            continue
        if any(getattr(grown[n], "shape", None) != getattr(v, "shape", None) for n, v in at_base.items()):
            doubled[d] = grown
    inputs = []
    for name, value in at_base.items():
        if not hasattr(value, "shape"):
            inputs.append(InputSignature(name, None, "scalar"))
            continue
        axes = []
        for i, length in enumerate(value.shape):
            grows = tuple(d for d in doubled if doubled[d][name].shape[i] == 2 * length)
            coef = Fraction(length)
            for d in grows:
                coef /= base[d]
            axes.append(Axis(coef, grows))
        inputs.append(InputSignature(name, tuple(axes), kind_of(value)))
    return Signature(family, world, tuple(inputs), dict(base), tuple(doubled))


@dataclass(frozen=True)
class Fit:
    """A user's inputs read as a family's: ``order[i]`` is the user input index for family input i
    (None: the user has no such input), and the dims every shape agrees with."""

    order: tuple[Optional[int], ...]
    dims: dict
    extra: tuple[int, ...] = ()  # user inputs the family has no slot for


def _solve(sig: InputSignature, shape: Sequence[int], dims: dict) -> bool:
    """Extend ``dims`` so ``shape`` fits ``sig`` (False: it cannot)."""
    if sig.axes is None or len(shape) != len(sig.axes):
        return False
    for axis, length in zip(sig.axes, shape):
        unknown = [d for d in axis.dims if d not in dims]
        if len(unknown) == 1:
            rest = axis.coef
            for d in axis.dims:
                if d != unknown[0]:
                    rest *= dims[d]
            value = Fraction(length) / rest
            if value.denominator != 1 or value <= 0:
                return False
            dims[unknown[0]] = int(value)
        elif unknown:
            return False  # two unknowns in one axis: left to another input to pin
        if axis.length(dims) != length:
            return False
    return True


def fit(signature: Signature, shapes: Sequence[Optional[tuple[int, ...]]], kinds: Sequence[str],
        fixed: Optional[dict] = None, max_missing: int = 1) -> Optional[Fit]:
    """An assignment of user inputs (``shapes``, None for scalars) to the family's inputs under which
    every assigned shape agrees with one set of dims: every family input assigned if possible, else
    up to ``max_missing`` left to the family's own builder (e.g. a norm weight a reference without
    the norm has no use for); fewer user inputs left over first."""
    fam = [s for s in signature.inputs if s.axes is not None]
    users = [i for i, s in enumerate(shapes) if s is not None]
    tried = 0
    for k in range(len(fam), max(0, len(fam) - max_missing) - 1, -1):
        found = []
        for chosen in itertools.combinations(range(len(fam)), k):
            for perm in itertools.permutations(users, k):
                tried += 1
                if tried > MAX_PERMUTATIONS:
                    break
                dims = dict(fixed or {})
                pairs = [(fam[c], u) for c, u in zip(chosen, perm)]
                ok = all(_kind_ok(sig.dtype_kind, kinds[u]) for sig, u in pairs)
                # twice: an axis of two dims is solved once another input has pinned one
                ok = ok and all(_solve(sig, shapes[u], dims) for sig, u in pairs)
                ok = ok and all(_solve(sig, shapes[u], dims) for sig, u in pairs)
                extra = tuple(i for i in users if i not in perm)
                if ok and (k == len(fam) or not extra):  # the family's own inputs stand in only for absent ones
                    order = {sig.name: u for sig, u in pairs}
                    found.append(Fit(tuple(order.get(s.name) for s in signature.inputs), dims, extra))
        if found:
            return min(found, key=lambda f: len(f.extra))
    return None


def _kind_ok(family_kind: str, user_kind: str) -> bool:
    return family_kind == user_kind or {family_kind, user_kind} <= {"float", "int"}


def mismatches(signature: Signature, shapes: Sequence[Optional[tuple[int, ...]]]) -> list[str]:
    """Why no assignment fits, input by input (user input i read as family input i): each input is
    held against the dims the other inputs agree on, so the one that disagrees is named."""
    fam = [s for s in signature.inputs if s.axes is not None]
    users = [tuple(s) for s in shapes if s is not None]
    out = []
    if len(users) < len(fam):
        out.append(f"{len(users)} tensor input(s) where {signature.family} takes {len(fam)}: "
                   + ", ".join(signature.shown(s.name) for s in fam))
    pairs = list(zip(fam, users))
    for k, (sig, shape) in enumerate(pairs):
        dims: dict = {}
        others = [p for j, p in enumerate(pairs) if j != k]
        for _ in range(2):  # twice: an axis of two dims is solved once the others pinned one
            for osig, oshape in others:
                _solve(osig, oshape, dims)
        trial = dict(dims)
        if _solve(sig, shape, trial) and all(_solve(o, sh, dict(trial)) for o, sh in others):
            continue
        out.append(_why(signature, sig, shape, dims))
    if len(users) > len(fam):
        out.append(f"{len(users) - len(fam)} input(s) more than {signature.family} takes (an epilogue's bias, "
                   "a norm's weight?): the family has no slot for them")
    # one input's transpose or wrong split makes its partners look wrong too: name the cause only
    for cause in (_TRANSPOSED, _SPLIT):
        if any(cause in r for r in out):
            return [r for r in out if cause in r or _COUNT in r]
    return out or [f"the shapes fit no single set of {signature.family} dims"]


_TRANSPOSED, _SPLIT, _COUNT = "only transposed", "is split across the ranks", "tensor input(s) where"


def _why(signature: Signature, sig: InputSignature, shape: tuple[int, ...], dims: dict) -> str:
    want = signature.shown(sig.name)
    axes = sig.axes or ()
    w = signature.world
    if len(shape) != len(axes):
        return (f"an input of {len(shape)} dims {list(shape)} where the family takes {want} ({len(axes)} dims): "
                "a different layout (e.g. [B, S, H, D] where the family flattens [B·H, S, D]); reshape it in the "
                "reference so the layouts agree")
    if len(shape) == 2 and _fits_reversed(sig, shape, dims) and not _solve(sig, shape, dict(dims)):
        return (f"an input shaped {list(shape)} fits {want} only transposed (nn.Linear keeps weights as [out, in]): "
                "transpose it in the reference (w.t()) or give the family's layout")
    said = []
    for axis, length in zip(axes, shape):
        expect = axis.length(dims)
        if expect is None or expect == length:
            continue
        if length * w == expect:
            said.append(f"axis {axis.label(w)} is split across the ranks ({length} of {expect}), which the family "
                        "does not split")
        elif length == expect * w:
            said.append(f"axis {axis.label(w)} is whole ({length}) where the family gives each rank 1/n of it "
                        f"({expect})")
        else:
            said.append(f"axis {axis.label(w)} is {length} where the other inputs make it {expect}")
    detail = "; ".join(said) or "its axes fit no dims the other inputs agree on"
    return (f"input {sig.name}: shaped {list(shape)} where the family takes {want}: {detail}; the sharded axis "
            f"differs: shard it as the family does")


def _fits_reversed(sig: InputSignature, shape: tuple[int, ...], dims: dict) -> bool:
    return _solve(InputSignature(sig.name, tuple(reversed(sig.axes or ())), sig.dtype_kind), shape, dict(dims))


def distance(signature: Signature, shapes: Sequence[Optional[tuple[int, ...]]]) -> int:
    """How far the user's tensors are from this family's inputs (for picking the nearest family to
    explain a mismatch against): tensors too many or too few, then dims that differ in count."""
    fam = [s.axes for s in signature.inputs if s.axes is not None]
    users = [s for s in shapes if s is not None]
    ndims = sum(abs(len(a) - len(u)) for a, u in zip(fam, users))
    return 10 * abs(len(fam) - len(users)) + ndims
