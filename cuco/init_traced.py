"""``cuco init --from-reference FILE --traced``: a spec for a workload no family computes, whose one
candidate is a host-driven baseline generated from the workload's own trace.

The workload runs on gloo at each world size the spec names (emulation worlds 2 and 4, and the
target world) under the recorder (cuco/op_trace.py); every recorded op must lower to the replay's
op set (cuco/traced_ops.py), or nothing is written and one line names the ops that do not. The
folder then holds the user's file (``reference.py``), the trace (``trace.json``), a module that
registers pattern ``traced_<name>`` from it (``traced_pattern.py``, run by ``spec.py``), the
reference contract at the workload's own shapes (``cuco_workload.py``), ``spec.py`` and a README.
``cuco evolve`` of the folder proposes the baseline, builds it with nvcc, emulates it against the
user's reference at worlds 2 and 4, and scores it; with an LLM configured, the agents mutate from it.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Optional

from cuco import baseline_codegen, init_workload, op_trace, traced_pattern
from cuco.cost_trace import cost_of
from cuco.traced_ops import Refused, lower
from design_space import ConfigError, SpecError

EMULATION_WORLDS = (2, 4)
WORLD_SIZES = (2, 4, 8)
MAX_INPUTS, MAX_OUTPUTS = 4, 2  # ctx.in[] / ctx.out[] (evaluator/runtime/cuco_ctx.h)
_FIX = ("write a custom pattern for it (docs/custom_pattern.md), or express that step with the ops the baseline "
        "replays (docs/commands.md, `cuco init --traced`)")


def traced_trace(path: Path, *, name: str, form: str, reference: Optional[str], inputs: Optional[str]) -> dict:
    """The trace of the workload at ``path`` at every world size, checked replayable."""
    records: dict[int, list[dict]] = {}
    for world in sorted({*EMULATION_WORLDS, *WORLD_SIZES}):  # the smallest first: a refusal comes early
        records.update(op_trace.record(path, worlds=[world], reference=reference, inputs=inputs, dtype="bf16"))
        refused = list(dict.fromkeys(r for rec in records[world] for r in lower(rec, world)[1]))
        if refused:
            raise SpecError(f"{path.name}: the generated baseline cannot replay {'; '.join(refused)}", _FIX)
    first = records[min(records)][0]
    tensor_inputs = [r for r in first["inputs"] if "tensor" in r]
    if len(tensor_inputs) > MAX_INPUTS or len(first["outputs"]) > MAX_OUTPUTS:
        raise SpecError(f"{path.name} takes {len(tensor_inputs)} tensor inputs and returns {len(first['outputs'])} "
                        f"outputs; a candidate gets at most {MAX_INPUTS} and {MAX_OUTPUTS}",
                        "pack inputs into fewer tensors (concatenate weights), or write a custom pattern "
                        "(docs/custom_pattern.md)")
    names = _input_names(_param_names(path, form, reference, inputs), len(first["inputs"]), first["inputs"])
    outputs = ("out",) if len(first["outputs"]) == 1 else tuple(f"out{j}" for j in range(len(first["outputs"])))
    costs = {str(w): dataclasses.asdict(cost_of([r["cost"] for r in ranks], w)) for w, ranks in records.items()}
    return {"name": name, "origin": path.name, "form": form, "dtype": "bf16", "inputs": names, "outputs": outputs,
            "worlds": {str(w): ranks for w, ranks in records.items()}, "costs": costs}


def _param_names(path: Path, form: str, reference: Optional[str], inputs: Optional[str]) -> tuple[str, ...]:
    """The workload's parameter names (read from its text, nothing imported here)."""
    import ast

    tree = ast.parse(path.read_text())
    want = {"kernelbench": "forward", "solution": "solution"}.get(form, reference or "reference")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == want:
            return tuple(a.arg for a in node.args.args if a.arg not in ("self", "group"))
    return ()


def _input_names(params: tuple[str, ...], count: int, refs: list[dict]) -> list[str]:
    """Names of the tensor inputs: the workload's parameter names where they line up, else in<i>."""
    use = params if len(params) == count and len(set(params)) == count else tuple(f"in{i}" for i in range(count))
    return [n for n, r in zip(use, refs) if "tensor" in r]


def write_traced_spec(out: Path, *, name: str, path: Path, trace: dict, reference: Optional[str],
                      builder: Optional[str]) -> list[str]:
    """The folder's files (see the module doc); returns their names."""
    (out / "trace.json").write_text(json.dumps(trace))
    (out / "traced_pattern.py").write_text(
        f'"""Pattern traced_{name}: the workload of {path.name} replayed from trace.json beside this file (written\n'
        'by `cuco init --traced`; see cuco/traced_pattern.py). spec.py runs it."""\n\nfrom pathlib import Path\n\n'
        "from cuco.traced_pattern import register_traced\n\n"
        'PATTERN = register_traced(Path(__file__).with_name("trace.json"))\n')
    (out / "cuco_workload.py").write_text(traced_pattern.adapter_text(
        inputs=tuple(trace["inputs"]), outputs=tuple(trace["outputs"]), reference=reference, builder=builder))
    if path.resolve() != (out / "reference.py").resolve():
        shutil.copyfile(path, out / "reference.py")
    worlds = ", ".join(sorted(trace["worlds"], key=int))
    (out / "spec.py").write_text(
        f'"""cuco spec {name}: the workload of {path.name} ({trace["form"]} form), replayed from its trace by a\n'
        'generated host-driven baseline (`cuco init --traced`; see README.md). Shapes are fixed: the sizes your\n'
        f'input builder gives at each traced world size ({worlds})."""\n\n'
        "import runpy\nfrom pathlib import Path\n\nfrom design_space import DType, KernelSpec, ShapeCase\n\n"
        f"# registers pattern traced_{name} (run afresh on every load: two spec folders' modules of one file\n"
        "# name would otherwise share a single import)\n"
        'runpy.run_path(str(Path(__file__).with_name("traced_pattern.py")))\n\n'
        f"SPEC = KernelSpec(\n    name={name!r},\n    pattern={'traced_' + name!r},\n"
        f"    description={'the workload of ' + path.name + ', replayed from its trace'!r},\n"
        f"    world_sizes={WORLD_SIZES!r},\n"
        '    # one shape: the dim "world" is the world size itself ("n"); every size is your builder\'s\n'
        '    shapes=(ShapeCase(name="user", dims={"world": "n"}),),\n'
        '    emulation_shapes=(ShapeCase(name="user", dims={"world": "n"}),),\n'
        f"    emulation_world_sizes={EMULATION_WORLDS!r},\n    dtypes=(DType.BF16,),\n    hardware=\"H100\",\n"
        '    reference="cuco_workload:reference",\n    inputs="cuco_workload:make_inputs",\n)\n')
    return ["spec.py", "reference.py", "cuco_workload.py", "traced_pattern.py", "trace.json"]


def check_source(trace: dict) -> str:
    """The generated candidate, rendered once and guarded (a finding here is cuco's own bug)."""
    from design_space.point import DesignPoint
    from evaluator import guard

    try:
        source = baseline_codegen.render(trace)
    except Refused as e:
        raise SpecError(f"{trace['origin']}: the generated baseline cannot replay {e}", _FIX) from None
    findings = guard.check(source, point=DesignPoint.parse_key(baseline_codegen.POINT))
    if findings and findings[0].rule == "source_size":
        raise SpecError(f"{trace['origin']}: the replay of its trace is {len(source) // 1024} KiB of CUDA, more than a "
                        f"candidate may hold ({guard.MAX_SOURCE_BYTES // 1024} KiB)",
                        "trace a smaller piece of the model (one layer, or fewer steps), or write a custom pattern "
                        "(docs/custom_pattern.md)")
    if findings:
        raise SpecError(f"the generated baseline fails the guard: {findings[0].reason}",
                        "report it as a cuco bug, with the reference that produced it")
    return source


def readme(name: str, path: Path, trace: dict) -> str:
    steps = {w: len(ranks[0]["ops"]) for w, ranks in trace["worlds"].items()}
    return (f"# {name}\n\nThe workload of `{path.name}` ({trace['form']} form), which no workload family computes, "
            "brought in with `cuco init --traced`.\n\n"
            "Its one candidate is a host-driven baseline generated from its trace: the reference ran on gloo at "
            f"world sizes {', '.join(steps)} ({', '.join(f'{n} recorded ops at {w}' for w, n in steps.items())}); "
            "each aten op is replayed by a simple CUDA kernel and each torch.distributed call by a library "
            "collective (`cuco render . --point " + baseline_codegen.POINT + "` prints it).\n\n"
            "Shapes are fixed: your input builder's at each world size (the pattern has no dims to vary). "
            "`cuco evolve .` builds it, emulates it against your reference at world sizes 2 and 4 and scores it; "
            "with an LLM configured (`--llm`), the agents mutate from it.\n\n"
            "Files: `reference.py` (yours), `trace.json` (the recorded ops), `traced_pattern.py` (registers "
            f"pattern `traced_{name}`), `cuco_workload.py` (the reference contract at your shapes), `spec.py`.\n")


def init_traced(path: Path, out: Path, *, source: str, arity: dict, reference: str, inputs: str, name: str,
                force: bool, check_out) -> tuple[list[str], str]:
    """Write the traced spec folder; returns (files, why)."""
    form = init_workload.form_of(source, reference, inputs, arity)
    if form not in init_workload.WORKLOAD_FORMS:
        raise ConfigError(f"{path.name} is not a workload --traced can run (found the {form} form)",
                          "give it a KernelBench-style Model + get_inputs(), a solution(*inputs) + get_inputs(), or "
                          "name a plain function and its input builder with --reference F --inputs G")
    named = (reference, inputs) if form == "function" else (None, None)
    trace = traced_trace(path, name=name, form=form, reference=named[0], inputs=named[1])
    check_source(trace)
    check_out(out, force)
    files = write_traced_spec(out, name=name, path=path, trace=trace, reference=named[0], builder=named[1])
    (out / "README.md").write_text(readme(name, path, trace))
    ops = len(trace["worlds"][str(EMULATION_WORLDS[0])][0]["ops"])
    why = (f"a host-driven baseline generated from its trace ({ops} recorded ops at world size "
           f"{EMULATION_WORLDS[0]}; world sizes {', '.join(sorted(trace['worlds'], key=int))}; fixed shapes)")
    return [*files, "README.md"], why
