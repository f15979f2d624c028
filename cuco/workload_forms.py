"""A user's workload as users write it, read into one shape: per-rank inputs and a call.

Forms (found in this order; ``--reference`` / ``--inputs`` name the functions of the last two):

- ``kernelbench``: ``class Model(nn.Module)`` whose ``forward(*inputs)`` calls torch.distributed,
  ``get_inputs()`` (one rank's inputs; it may call ``dist.get_rank()``) and optionally
  ``get_init_inputs()`` (the constructor's arguments); the model's parameters become inputs after
  forward()'s (``_kernelbench``);
- ``solution``: ``solution(*inputs)`` with ``get_inputs()``;
- ``native``: cuco's own ``reference(inputs: dict, dims, group) -> dict`` with
  ``make_inputs(dims, rank, world, dtype, gen) -> dict`` (it needs a family's dims: see
  ``needs_dims``);
- ``function``: any ``f(*inputs)`` (a keyword ``group`` is passed when it takes one) with an input
  builder taking ``()``, ``(rank, world)`` or ``(rank, world, gen)``.

Inputs may be float, int or bool tensors and plain scalars; outputs a tensor or a tuple or list of
them. Everything here runs inside a gloo process group (torch is imported by the caller).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from design_space.errors import SpecError

FORMS = ("kernelbench", "solution", "native", "function")


@dataclass(frozen=True)
class Workload:
    """One rank's view of a user workload: ``build(rank, world, gen)`` -> inputs (a list, the call's
    argument order), ``call(inputs, group)`` -> outputs (a list)."""

    form: str
    path: str
    build: Callable[[int, int, Any], list]
    call: Callable[[list, Any], list]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...] = ()
    init_args: tuple = ()  # a KernelBench Model's constructor arguments, as it was built


def load_module(path: Path):
    """Import the user's file by path (its folder on sys.path, so its own imports work)."""
    path = Path(path).resolve()
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"cuco_user_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SpecError(f"cannot import {path}", "pass a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def detect_form(module, reference: Optional[str] = None, inputs: Optional[str] = None) -> str:
    names = set(dir(module))
    if reference is None and {"Model", "get_inputs"} <= names and inspect.isclass(getattr(module, "Model")):
        return "kernelbench"
    if reference is None and {"solution", "get_inputs"} <= names:
        return "solution"
    ref, inp = reference or "reference", inputs or "make_inputs"
    if ref in names and inp in names and _arity(getattr(module, inp)) == 5:
        return "native"
    if ref in names and inp in names:
        return "function"
    found = ", ".join(sorted(n for n in names if callable(getattr(module, n)) and not n.startswith("_"))) or "none"
    raise SpecError(f"{module.__file__} has no workload cuco can read (callables: {found})",
                    "give it a KernelBench-style Model + get_inputs() (+ get_init_inputs()), a solution(*inputs) + "
                    "get_inputs(), or name your function and input builder with --reference F --inputs G")


def _arity(fn) -> int:
    try:
        return len([p for p in inspect.signature(fn).parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty])
    except (TypeError, ValueError):
        return -1


def as_list(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    return [value]


def _builder(fn) -> Callable[[int, int, Any], list]:
    n = _arity(fn)
    if n == 0:
        return lambda rank, world, gen: as_list(fn())
    if n == 2:
        return lambda rank, world, gen: as_list(fn(rank, world))
    if n == 3:
        return lambda rank, world, gen: as_list(fn(rank, world, gen))
    raise SpecError(f"the input builder {fn.__name__} takes {n} arguments", "give it (), (rank, world) or "
                    "(rank, world, gen)")


def _with_group(fn) -> Callable[[list, Any], list]:
    takes_group = "group" in inspect.signature(fn).parameters
    return lambda inputs, group: as_list(fn(*inputs, group=group) if takes_group else fn(*inputs))


def load(path: Path, *, reference: Optional[str] = None, inputs: Optional[str] = None,
         dims: Optional[dict] = None, dtype: Any = None, init_args: Optional[Sequence] = None) -> Workload:
    """The workload of ``path``. ``dims``/``dtype``: what a native builder is called with;
    ``init_args``: a KernelBench Model's constructor arguments instead of ``get_init_inputs()``'s."""
    module = load_module(path)
    form = detect_form(module, reference, inputs)
    if form == "kernelbench":
        return _kernelbench(module, path, init_args)
    if form == "solution":
        return Workload(form, str(path), lambda rank, world, gen: as_list(module.get_inputs()),
                        _with_group(module.solution), _param_names(module.solution))
    ref, inp = getattr(module, reference or "reference"), getattr(module, inputs or "make_inputs")
    if form == "native":
        if dims is None:
            raise SpecError("a native reference needs a family's dims to build its inputs",
                            "pass --pattern with it, or use a KernelBench-style file")
        names: list[str] = []

        def build(rank, world, gen):
            made = inp(dict(dims), rank, world, dtype, gen)
            names[:] = list(made)
            return list(made.values())
        return Workload(form, str(path), build,
                        lambda xs, group: as_list(ref(dict(zip(names, xs)), dict(dims), group)), ())
    return Workload(form, str(path), _builder(inp), _with_group(ref), _param_names(ref))


LIFT_SEED = 20251  # the same on every rank: a replicated weight (a router, a norm's scale) stays so


def _kernelbench(module, path: Path, init_args: Optional[Sequence] = None) -> Workload:
    """A ``Model`` whose weights are its own parameters (as Megatron's and vLLM's layers hold them)
    has them lifted into inputs after forward()'s, named as ``named_parameters`` names them, and is
    called through ``torch.func.functional_call``: each rank's shard is then an input cuco can read
    as a family's and hand to a kernel. Their values are drawn afresh (the same on every rank): a
    constructor's zeros (a bias) or ``torch.empty`` would hide what the code does with them. The
    layer must compute at other sizes than its constructor's (as nn.Linear does; a norm's
    normalized_shape is kept in step with its weight here); one whose forward() reads sizes it was
    constructed with is built again with them resized (``init_args``: cuco/workload_sizes.py)."""
    import torch

    args = tuple(as_list(getattr(module, "get_init_inputs", lambda: [])()) if init_args is None else init_args)
    with torch.random.fork_rng():  # the constructor's own draws must not move the caller's stream
        torch.manual_seed(LIFT_SEED)
        model = module.Model(*args)
    forward_names = _param_names(model.forward)
    gen = torch.Generator().manual_seed(LIFT_SEED)
    lifted = {name: _drawn(p, gen) for name, p in model.named_parameters()}
    if not lifted:
        return Workload("kernelbench", str(path), lambda rank, world, gen: as_list(module.get_inputs()),
                        lambda xs, group: as_list(model(*xs)), forward_names, init_args=args)

    def build(rank, world, gen):
        return as_list(module.get_inputs()) + [t.clone() for t in lifted.values()]

    # cuco runs the layer at other sizes than the constructor's (the spec's shapes, the emulator's
    # tiny ones): a norm's normalized_shape follows its weight, as F.linear follows a Linear's
    norms = [(f"{name}.weight" if name else "weight", m) for name, m in model.named_modules()
             if hasattr(m, "normalized_shape")]

    def call(xs, group):
        k = len(xs) - len(lifted)
        params = dict(zip(lifted, xs[k:]))
        for key, norm in norms:
            if key in params:
                norm.normalized_shape = tuple(params[key].shape)
        return as_list(torch.func.functional_call(model, params, tuple(xs[:k])))
    return Workload("kernelbench", str(path), build, call, forward_names + tuple(lifted), init_args=args)


def _drawn(param, gen):
    import torch

    values = torch.randn(param.shape, generator=gen, dtype=torch.float32)
    return (values / param.shape[-1] ** 0.5 if param.dim() >= 2 else values).to(param.dtype)


def _param_names(fn) -> tuple[str, ...]:
    try:
        return tuple(p.name for p in inspect.signature(fn).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "group"))
    except (TypeError, ValueError):
        return ()


def describe(values: Sequence) -> list[str]:
    """``name: shape dtype`` lines of tensors or scalars, for diagnoses."""
    out = []
    for v in values:
        shape = getattr(v, "shape", None)
        out.append(f"{list(shape)} {str(getattr(v, 'dtype', '')).replace('torch.', '')}" if shape is not None
                   else f"scalar {v!r}")
    return out
