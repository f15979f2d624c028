"""Does a user's workload compute its family at sizes other than its own?

The semantic check (cuco/semantic_check.py) runs the user's code at the user's sizes; the emulator
then runs it as the reference at tiny shapes drawn around the spec's emulation shapes. Code that
reads a size fixed somewhere (``x.view(-1, self.hidden)`` with ``hidden`` given to ``__init__``,
``x[:, :HIDDEN]`` with a module constant) passes the first and fails, or silently computes
something else, at the second: every candidate would then be judged against a broken reference.
So ``cuco init`` runs the written spec's reference at its emulation shapes and at drawn variants
of them, beside the family's canonical reference on the same inputs, before it keeps the spec
(``size_problems``). A KernelBench ``Model`` whose constructor takes the sizes gets them resized:
each int constructor argument equal to one of the workload's dims (the whole dim, or one rank's
share of it, at every world size probed) is tried as that dim (``mappings``), and the first reading
under which the reference agrees with the family's everywhere is written into the adapter.
"""

from __future__ import annotations

import itertools
import math
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Optional, Sequence

from cuco.semantic_check import EXAMPLES, SemanticVerdict
from design_space import dim_expr
from design_space.errors import SpecError
from design_space.patterns import get_pattern
from design_space.spec import KernelSpec, ShapeCase

SCALES = ("global", "per_rank")
MAX_READINGS = 8  # constructor readings tried before giving up
MAX_PRODUCT = 4096  # combinations enumerated to choose them from
DRAW_SEED = 0  # public on purpose: these draws test the user's own reference, never a candidate
DRAWS_PER_SHAPE = 2
SHOWN = 3  # problems quoted in an error


def mappings(verdict: SemanticVerdict) -> list[tuple[tuple[int, str, str], ...]]:
    """Readings of a KernelBench Model's int constructor arguments as the workload's dims, those
    that map the most arguments first (an argument equal to no dim keeps its value)."""
    m = verdict.match
    if m is None or verdict.form != "kernelbench" or not verdict.init_args or not verdict.init_args[0]:
        return []
    sizes = {d: v for d, v in m.dims.items() if d not in m.variant}  # flags are not sizes
    options = []
    for i in range(len(verdict.init_args[0])):
        fits = [(i, d, scale) for d, v in sizes.items() for scale in SCALES
                if all(_agrees(args[i] if i < len(args) else None, dim_expr.value_at(v, w), w, scale)
                       for args, w in zip(verdict.init_args, verdict.worlds))]
        options.append([*fits, None])
    if math.prod(len(o) for o in options) > MAX_PRODUCT:  # many sizes: each argument's first reading only
        options = [o[:1] + [None] if o[0] else [None] for o in options]
    readings = {tuple(x for x in combo if x is not None) for combo in itertools.product(*options)}
    return sorted((r for r in readings if r), key=lambda r: (-len(r), r))[:MAX_READINGS]


def _agrees(arg: Optional[int], dim: int, world: int, scale: str) -> bool:
    if arg is None or arg <= 0:
        return False
    return arg == dim if scale == "global" else (dim % world == 0 and arg * world == dim)


def size_problems(spec: KernelSpec, search: Sequence[Path] = ()) -> list[str]:
    """What goes wrong when ``spec``'s reference runs at its emulation shapes and drawn variants of
    them, at every emulation world size, against the family's canonical reference on the inputs the
    spec's own builder makes; empty when nothing does. ``search``: folders the reference may import
    from besides the spec's own (after them)."""
    from evaluator import reference  # noqa: PLC0415
    from evaluator.shape_draws import shape_pool  # noqa: PLC0415

    pattern = get_pattern(spec.pattern)
    spec = spec.model_copy(update={"search_path": (*spec.search_path, *map(str, search))})
    worlds = spec.emulation_world_sizes
    pool = shape_pool(pattern, spec.emulation_shapes, worlds, DRAWS_PER_SHAPE, DRAW_SEED)  # as the emulator draws
    cases = [s for options in pool.values() for s in options]
    cache = Path(tempfile.mkdtemp(prefix="cuco-sizes-"))
    try:  # both references in one worker launch
        mine, theirs = reference.prepare_many([(spec, cache / "user"), (_canonical_twin(spec, cache), cache / "family")],
                                              pattern, worlds=worlds, cases=cases)
        return _differences(pattern, mine, theirs)
    except SpecError as e:
        return [_condensed(e.problem, spec.emulation_shapes)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _differences(pattern, mine: Sequence, theirs: Sequence) -> list[str]:
    """The first output that differs, per shape and world size."""
    problems = []
    for a, b in zip(mine, theirs):
        found = ((rank, name, why) for rank, (ra, rb) in enumerate(zip(a.ranks, b.ranks))
                 for name, fa, fb in zip(pattern.outputs, ra.outputs, rb.outputs) for why in [_differs(fa, fb)] if why)
        first = next(found, None)
        if first:
            problems.append(f"at {_dims(a.shape)}, world size {a.world}: output {first[1]} of rank {first[0]} {first[2]}")
    return list(dict.fromkeys(problems))


def _canonical_twin(spec: KernelSpec, cache: Path) -> KernelSpec:
    """``spec`` with the family's canonical reference (under a name of its own, beside the spec's
    input builder, which may live in a module named ``reference`` too)."""
    folder = cache / "canonical"
    folder.mkdir(parents=True, exist_ok=True)
    module = f"cuco_canonical_{spec.pattern}"
    shutil.copyfile(EXAMPLES / spec.pattern / "reference.py", folder / f"{module}.py")
    return KernelSpec.model_validate({**spec.model_dump(), "reference": f"{module}:reference",
                                      "search_path": (*spec.search_path, str(folder))})


def _condensed(problem: str, shapes: Sequence[ShapeCase]) -> str:
    """A failed reference run as one clause: where in the user's file, and the exception."""
    parts = [p.strip() for p in problem.split(" | ") if p.strip() and not set(p.strip()) <= set("^~ ")]
    world = re.search(r"at world size (\d+)", problem)
    where = [i for i, p in enumerate(parts) if re.match(r'File ".*reference\.py", line \d+', p)]
    said = parts[-1] if parts else problem
    if where:
        i = where[-1]
        line = re.search(r"line (\d+), in (\S+)", parts[i])
        code = f": {parts[i + 1]}" if i + 1 < len(parts) - 1 else ""
        said = f"reference.py line {line.group(1)}, in {line.group(2)}{code}: {said}"
    return (f"at shapes like {_dims(shapes[0])}" + (f", world size {world.group(1)}" if world else "") + f": {said}")


def _differs(mine, theirs) -> Optional[str]:
    import torch  # noqa: PLC0415

    from cuco.semantic_probe import outputs_close  # noqa: PLC0415

    if tuple(mine.shape) != tuple(theirs.shape):
        return f"is shaped {list(mine.shape)} where the family's is {list(theirs.shape)}"
    a, b = (torch.from_file(str(f.path), size=f.nbytes, dtype=torch.uint8).view(getattr(torch, f.dtype))
            .reshape(f.shape) for f in (mine, theirs))
    return None if outputs_close(a, b.to(a.dtype), torch) else "differs from the family's"


def _dims(case: ShapeCase) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.dims.items())


def fit_sizes(folder: Path, verdict: SemanticVerdict, write_adapter: Callable[[Sequence], None],
              search: Sequence[Path] = ()) -> tuple:
    """Make the spec at ``folder`` run at other sizes, or raise SpecError saying why it cannot;
    returns the constructor reading written (``()``: none needed). ``write_adapter(sized)``
    rewrites the folder's cuco_workload.py; ``search`` as for ``size_problems``."""
    from cuco.spec_loader import load_spec  # noqa: PLC0415

    problems = size_problems(load_spec(folder), search)
    if not problems:
        return ()
    for sized in mappings(verdict):
        write_adapter(sized)
        if not size_problems(load_spec(folder), search):
            return sized
    write_adapter(())
    raise SpecError(refusal(verdict.match.family if verdict.match else "its family", problems), SIZES_FIX)


SIZES_FIX = ("read sizes from the tensors (x.shape[-1], w.shape[0]) instead of constants; a KernelBench Model may "
             "take them as constructor arguments from get_init_inputs(), which cuco resizes")


def refusal(family: str, problems: Sequence[str]) -> str:
    """Why a reference right at its own sizes only cannot be a spec's, in one sentence."""
    return (f"the reference computes {family} at its own sizes but not at the others cuco runs it at (the CPU "
            "emulator's tiny shapes and draws around them): " + "; ".join(problems[:SHOWN])
            + (f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""))
