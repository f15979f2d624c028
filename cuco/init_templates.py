"""The text ``cuco init`` writes: spec.py, a skeleton reference.py and README.md. Shapes come
from ``examples/<pattern>/spec.py`` when that example exists, else placeholders that fit the
pattern's world-size rules, marked TODO."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

from design_space import KernelSpec, Pattern, SpecError
from design_space.spec import DEFAULT_TOLERANCES

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_PLACEHOLDER_WORLDS = (2, 4, 8)
_PLACEHOLDER_EMU_WORLDS = (2, 4)


def example_spec(pattern: str) -> Optional[KernelSpec]:
    """The shipped example's spec for ``pattern``, or None when there is none (or it does not load)."""
    folder = EXAMPLES / pattern
    if not (folder / "spec.py").is_file():
        return None
    from cuco.spec_loader import load_spec
    try:
        return load_spec(folder)
    except SpecError:
        return None


def _fitting_value(pattern: Pattern, worlds: tuple[int, ...], choices: tuple[int, ...]) -> dict[str, int]:
    """One value for every dim that the pattern accepts at every world size (placeholders); a flag
    a shape may leave out is left out (its off value)."""
    names = [d for d in pattern.dims if d not in pattern.optional_flags]
    for v in choices:
        dims = {d: v for d in names}
        if not any(pattern.dim_problems(dims, w) for w in worlds):
            return dims
    return {d: choices[0] for d in names}


def _lit(v) -> str:
    """A Python literal in the style of the shipped examples (double-quoted strings)."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_lit(k)}: {_lit(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple):
        return "(" + ", ".join(map(_lit, v)) + (",)" if len(v) == 1 else ")")
    return repr(v)


def _shape(name: str, dims: dict[str, int]) -> str:
    return f"        ShapeCase(name={_lit(name)}, dims={_lit(dims)}),\n"


TODO_SHAPES = "spec.py holds placeholder shapes (marked TODO): give it the sizes of your workload"
TODO_REFERENCE = ("reference.py is a skeleton that raises NotImplementedError: write make_inputs and reference "
                  "before running `cuco evolve`")


def shapes_block(pattern: Pattern) -> tuple[str, bool]:
    """(the KernelSpec keyword arguments for worlds, shapes, dtypes and hardware; True when they
    are TODO placeholders)."""
    ex = example_spec(pattern.name)
    if ex is not None:
        text = (f"    # Shapes, world sizes and dtypes from examples/{pattern.name}/spec.py: edit them to your workload.\n"
                f"    world_sizes={_lit(ex.world_sizes)},\n    shapes=(\n"
                + "".join(_shape(s.name, dict(s.dims)) for s in ex.shapes) + "    ),\n")
        if ex.primary_shape:
            text += f"    primary_shape={_lit(ex.primary_shape)},\n"
        text += ("    emulation_shapes=(\n" + "".join(_shape(s.name, dict(s.dims)) for s in ex.emulation_shapes)
                 + f"    ),\n    emulation_world_sizes={_lit(ex.emulation_world_sizes)},\n"
                 f"    dtypes=({', '.join(f'DType.{d.name}' for d in ex.dtypes)}{',' if len(ex.dtypes) == 1 else ''}),\n")
        custom = {d: t for d, t in ex.tolerances.items() if DEFAULT_TOLERANCES.get(d) != t}
        if custom:
            text += ("    tolerances={" + ", ".join(f"DType.{d.name}: Tolerance(atol={t.atol!r}, rtol={t.rtol!r})"
                                              for d, t in custom.items()) + "},\n")
        return text + f"    hardware={_lit(ex.hardware)},\n", False
    big = _fitting_value(pattern, _PLACEHOLDER_WORLDS, (4096, 8192, 1024, 512, 64, 8))
    small = _fitting_value(pattern, _PLACEHOLDER_EMU_WORLDS, (64, 32, 16, 128, 8, 4))
    dims = ", ".join(pattern.dims)
    text = (f"    # TODO: placeholder shapes. Give each shape the real sizes of your workload (dims: {dims});\n"
            f"    # every dim must fit every world size (the spec loader says which do not).\n"
            f"    world_sizes={_lit(_PLACEHOLDER_WORLDS)},\n    shapes=(\n" + _shape("todo-small", big)
            + _shape("todo-large", {d: v * 2 for d, v in big.items()}) + "    ),\n"
            f"    # TODO: tiny shapes the CPU emulator runs in seconds (keep them a few dozen per dim).\n"
            f"    emulation_shapes=(\n" + _shape("emu-todo", small) + "    ),\n"
            f"    emulation_world_sizes={_lit(_PLACEHOLDER_EMU_WORLDS)},\n    dtypes=(DType.BF16,),\n    hardware=\"H100\",\n")
    return text, True


def spec_text(*, name: str, pattern: Pattern, origin: str, reference: str, inputs: str,
              seed_kernel: Optional[str]) -> tuple[str, bool]:
    """(spec.py, whether it holds TODO placeholders)."""
    block, todo = shapes_block(pattern)
    uses_tol = "Tolerance(" in block
    imports = "DType, KernelSpec, ShapeCase" + (", Tolerance" if uses_tol else "")
    seed = (f"    # The host-driven program the fast path starts from (relative to this folder).\n"
            f"    seed_kernel={_lit(seed_kernel)},\n") if seed_kernel else ""
    text = (f'"""cuco spec {name}: {pattern.name}, scaffolded by `cuco init` from {origin} (see README.md)."""\n\n'
            f"from design_space import {imports}\n\n"
            f"SPEC = KernelSpec(\n    name={_lit(name)},\n    pattern={_lit(pattern.name)},\n"
            f"    description={_lit(pattern.description)},\n{block}"
            f"    reference={_lit(reference)},\n    inputs={_lit(inputs)},\n{seed})\n")
    return text, todo


def skeleton_reference(pattern: Pattern) -> str:
    """reference.py for a pattern with no shipped example: both functions raise until written."""
    dims = ", ".join(f'dims["{d}"]' for d in pattern.dims)
    return f'''"""Reference and input builder for {pattern.name} (torch + torch.distributed). TODO: write both.

{pattern.description}
The evaluator calls them on every rank (gloo on CPU, NCCL on GPUs); examples/allgather_gemm/reference.py
is a complete example of the contract.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs {{{", ".join(repr(i) + ": tensor" for i in pattern.inputs)}}}, built from {dims}.

    Draw them with ``gen`` (seeded per rank) and make them differ across ranks and elements, so a
    kernel that reads the wrong shard or skips a transfer gives a wrong result.
    """
    raise NotImplementedError("write make_inputs: return {{{", ".join(repr(i) + ": ..." for i in pattern.inputs)}}} "
                              "for this rank (see the docstring)")


def reference(inputs: dict, dims: dict, group) -> dict:
    """This rank's outputs {{{", ".join(repr(o) + ": tensor" for o in pattern.outputs)}}}, computed with
    torch.distributed collectives on ``group`` (the result every candidate kernel must match)."""
    raise NotImplementedError("write reference: compute {{{", ".join(repr(o) + ": ..." for o in pattern.outputs)}}} "
                              "with torch.distributed on `group`, accumulating in fp32")
'''


def readme_text(*, name: str, pattern: Pattern, origin: str, why: str, out: Path, todo: Sequence[str],
                seed_kernel: Optional[str], analysis: Sequence[str]) -> str:
    files = ["- `spec.py`: the KernelSpec (shapes, world sizes, dtypes, tolerances, hardware).",
             "- `reference.py`: the torch reference and the per-rank input builder."]
    if seed_kernel:
        files.append(f"- `{seed_kernel}`: the host-driven seed program (KernelSpec.seed_kernel), kept as the "
                     "fast path's starting point.")
    found = "\n".join(f"- {line}" for line in analysis)
    return (f"# {name}: {pattern.name}\n\n{pattern.description}\n\n"
            f"Scaffolded by `cuco init` from `{origin}`. Pattern `{pattern.name}` ({why}).\n\n"
            + (f"**What the seed does** (static analysis):\n{found}\n\n" if analysis else "")
            + "**Files:**\n" + "\n".join(files) + "\n\n"
            + ("**To do before a search:**\n" + "".join(f"- {t}.\n" for t in todo) + "\n" if todo else "")
            + f"**Next:**\n- `cuco space {out}`: the design space, the bound per shape and the best points "
              "(simulated).\n"
            + f"- `cuco render {out} --point <design point>`: the CUDA one point renders to.\n"
            + f"- `cuco evolve {out}`: search the design space.\n")
