"""``cuco init --from-reference`` for workloads written the usual way (KernelBench-style
``Model`` + ``get_inputs``, ``solution(*inputs)`` + ``get_inputs``, or a plain function with its
input builder): the semantic check finds the family the code computes, then the spec folder gets
the user's file, a three-line adapter (cuco/workload_adapter.py) and a spec whose headline shape
is the workload's own sizes. When no family computes it, nothing is written: the error says why,
for the nearest family."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Optional, Sequence

from cuco.init_templates import _lit, _shape, example_spec
from cuco.semantic_check import SemanticVerdict, check_workload
from cuco.workload_adapter import adapter_text
from cuco.workload_sizes import fit_sizes
from design_space import SpecError, dim_expr, get_pattern

WORKLOAD_FORMS = ("kernelbench", "solution", "function")


def form_of(source: str, reference: str, inputs: str, arity: dict) -> str:
    """Which form a file is written in, read from its text (nothing is imported)."""
    tree = ast.parse(source)
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if "Model" in classes and "get_inputs" in arity:
        return "kernelbench"
    if "solution" in arity and "get_inputs" in arity:
        return "solution"
    if reference in arity and inputs in arity:
        # cuco's own builder takes (dims, rank, world, dtype, gen): a reference beside it is native
        # (and one of the wrong arity is then named as such)
        low, high = arity[inputs]
        return "native" if low <= 5 <= (high if high >= 0 else 99) else "function"
    return "unknown"


def verdict_or_error(path: Path, *, reference: Optional[str], inputs: Optional[str], pattern: Optional[str],
                     native_dims: Optional[dict] = None) -> SemanticVerdict:
    verdict = check_workload(path, reference=reference, inputs=inputs, families=[pattern] if pattern else None,
                             native_dims=native_dims)
    if verdict.match is None:
        raise SpecError(f"{path.name}: {verdict.diagnosis()}",
                        "change the reference as the reason says (cuco checks it against each family's canonical "
                        "reference on your own inputs), register a pattern of your own (docs/custom_pattern.md), or "
                        "pass --traced for a host-driven baseline generated from the reference's own trace")
    return verdict


def write_workload_spec(out: Path, *, name: str, path: Path, verdict: SemanticVerdict, reference: Optional[str],
                        inputs: Optional[str]) -> list[str]:
    """spec.py, reference.py (the user's file) and cuco_workload.py; returns the files written."""
    m = verdict.match
    pattern = get_pattern(m.family)
    ex = example_spec(m.family)
    if ex is None:
        raise SpecError(f"the {m.family} family has no example spec to take emulation shapes from",
                        "run cuco from its source checkout")
    emu = emulation_shapes(m.family, m.dims, [(s.name, {**s.dims, **m.variant}) for s in ex.emulation_shapes],
                           ex.emulation_world_sizes)
    text = (f'"""cuco spec {name}: {m.family}, from {path.name} ({verdict.form} form), checked against the family\'s\n'
            f'canonical reference by `cuco init` (see README.md)."""\n\n'
            "from design_space import DType, KernelSpec, ShapeCase\n\n"
            f"SPEC = KernelSpec(\n    name={_lit(name)},\n    pattern={_lit(m.family)},\n"
            f"    description={_lit(pattern.description)},\n"
            f"    world_sizes={_lit(ex.world_sizes)},\n"
            "    # the sizes your get_inputs() built (global dims; \"64*n\": 64 on each of n ranks, n the world\n"
            "    # size, never a dim); add the shapes of your model here\n"
            f"    shapes=(\n{_shape('user', dict(m.dims))}    ),\n"
            "    # tiny shapes for the CPU emulator, the family's, with your workload's flags\n"
            "    emulation_shapes=(\n" + "".join(_shape(n, d) for n, d in emu) + "    ),\n"
            f"    emulation_world_sizes={_lit(ex.emulation_world_sizes)},\n    dtypes=(DType.BF16,),\n"
            f"    hardware={_lit(ex.hardware)},\n"
            '    reference="cuco_workload:reference",\n    inputs="cuco_workload:make_inputs",\n)\n')
    ast.parse(text)
    (out / "spec.py").write_text(text)
    if path.resolve() != (out / "reference.py").resolve():
        shutil.copyfile(path, out / "reference.py")
    write_adapter(out, verdict, reference, inputs)
    return ["spec.py", "reference.py", "cuco_workload.py"]


def write_adapter(out: Path, verdict: SemanticVerdict, reference: Optional[str], inputs: Optional[str],
                  sized: Sequence = ()) -> None:
    m = verdict.match
    (out / "cuco_workload.py").write_text(adapter_text(family=m.family, order=m.order, reference=reference,
                                                       inputs=inputs, unbatched=m.unbatched,
                                                       transposed=m.transposed, merged=m.merged, sized=sized))


def fit_workload_sizes(out: Path, origin: Path, verdict: SemanticVerdict, reference: Optional[str],
                       inputs: Optional[str]) -> str:
    """Check the spec at ``out`` at other sizes than the user's (cuco/workload_sizes.py), resizing
    a Model's constructor arguments where that makes it agree; SpecError when nothing does. Returns
    what was resized, for the user ("" when nothing was). The user's own folder stays importable
    (after the spec's): a reference importing a module beside it runs as it will once that module
    is copied."""
    sized = fit_sizes(out, verdict, lambda s: write_adapter(out, verdict, reference, inputs, s),
                      search=(origin.resolve().parent,))
    return ", ".join(f"get_init_inputs()[{i}] follows {d}" + (" / world size" if scale == "per_rank" else "")
                     for i, d, scale in sized)


def emulation_shapes(family: str, user: dict, shapes: list[tuple[str, dict]],
                     worlds: tuple[int, ...]) -> list[tuple[str, dict]]:
    """The family's tiny emulation shapes, each dim that grows with the world in the user's workload
    growing here too: ``"n"`` stays ``"n"`` (one per rank is the workload's structure), ``"64*n"``
    becomes the tiny shape's value at the largest world per rank (k=64 at 2, 4: ``"16*n"``). A
    shape that then fits some world no longer is left out, unless none fits (then the family's)."""
    scaled = {d: dim_expr.linear(v) for d, v in user.items() if isinstance(v, str)}
    if not scaled:
        return shapes
    pattern, top, out = get_pattern(family), max(worlds), []
    for name, dims in shapes:
        grown = dict(dims)
        for d, line in scaled.items():
            if isinstance(grown.get(d), int) and line is not None:
                grown[d] = "n" if line == (1, 0) else dim_expr.scaled(max(1, grown[d] // top))
        if all(not pattern.dim_problems(dim_expr.resolve(grown, w), w) for w in worlds):
            out.append((name, grown))
    return out or shapes


def how_it_matched(verdict: SemanticVerdict) -> str:
    m = verdict.match
    flags = f", {', '.join(f'{k}={v}' for k, v in m.variant.items())}" if m.variant else ""
    dims = ", ".join(f"{k}={v}" for k, v in m.dims.items() if k not in m.variant)
    names = {u: get_pattern(m.family).inputs[i] for i, u in enumerate(m.order) if u is not None}
    said = []
    if m.transposed:
        said.append(f"input(s) {', '.join(map(verdict.named, m.transposed))} in nn.Linear's [out, in] layout: the "
                    "kernel takes them with the last two axes swapped (w.transpose(-2, -1).contiguous(), once)")
    if m.merged:
        said.append(f"inputs {verdict.named(m.merged[0])} and {verdict.named(m.merged[1])} are the halves of "
                    f"{names.get(m.merged[0], '?')}: the "
                    "kernel takes them side by side (torch.cat on the last axis, once)")
    flipped = "".join(f"; {s}" for s in said)
    return (f"its outputs equal the {m.family} reference's on its own inputs at world sizes 2 and 4 "
            f"({verdict.form} form, dims {dims}{flags}{flipped})")
