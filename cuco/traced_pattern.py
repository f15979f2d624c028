"""The ``traced_<name>`` pattern of a spec folder ``cuco init --traced`` wrote: registered like a
plugin (docs/custom_pattern.md) from the folder's ``trace.json``, and the reference contract over
the user's workload at its own shapes (``TracedAdapter``, the folder's ``cuco_workload.py``).

Shapes are fixed: the pattern has one dim, ``world`` (written ``"n"``: the world size itself, which
the emulator never varies), and ``varied_dims=()``. Every size is the one the user's input builder
gives at that world; the trace holds the emulation worlds and the target world, nothing else. Its
one design point is the generated baseline's (``baseline_codegen.POINT``); its cost is the trace's
own numbers (cuco/cost_trace.py's reading of the same run), so nothing reruns the workload to
score it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Optional

from cuco import baseline_codegen, op_trace, workload_forms
from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.errors import SpecError
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, register_pattern, require_renderable
from design_space.point import DesignPoint

TRACE_FILE = "trace.json"


def supported() -> dict:
    point = DesignPoint.parse_key(baseline_codegen.POINT)
    return {"backend": (Backend.HOST_NCCL,), "placement": (Placement.SEQUENTIAL,),
            "sync_scope": (SyncScope.GLOBAL_BARRIER,), "issuer": (Issuer.CTA,), "chunk_bytes": (point.chunk_bytes,),
            "comm_ctas": (point.comm_ctas,)}


def cost_from(data: dict) -> WorkloadCost:
    then = data.get("then")
    return WorkloadCost(**{**data, "then": cost_from(then) if then else None})


def pattern_of(trace: dict) -> Pattern:
    """The pattern a trace defines (see the module doc)."""
    worlds = sorted(int(w) for w in trace["worlds"])
    name = f"traced_{trace['name']}"

    @functools.lru_cache(maxsize=None)
    def buffers(world: int) -> tuple[int, int]:
        return baseline_codegen.buffers(trace, world)

    def problems(dims, world: int) -> list[str]:
        if world not in worlds:
            return [f"{name} was traced at world sizes {', '.join(map(str, worlds))} only, not {world} (run "
                    "`cuco init --traced` again with the world sizes you need)"]
        if int(dims.get("world", world)) != world:
            return [f"its dim world is {dims['world']} at world size {world}: write it \"n\""]
        return []

    def cost(dims, world: int, dtype) -> WorkloadCost:
        if problems(dims, world):
            raise SpecError(problems(dims, world)[0], "score it at a traced world size")
        return cost_from(trace["costs"][str(world)])

    return Pattern(
        name=name, description=f"the workload of {trace['origin']}, replayed from its trace (fixed shapes)",
        dims=("world",), inputs=tuple(trace["inputs"]), outputs=tuple(trace["outputs"]), supported=supported(),
        cost=cost, dim_problems=problems, symm_bytes=lambda dims, world, dtype: buffers(world)[1],
        workspace_bytes=lambda dims, world, dtype: buffers(world)[0], varied_dims=(),
        notes=(f"traced at world sizes {', '.join(map(str, worlds))}; shapes are the workload's own",))


def register_traced(trace_path: str | Path) -> Pattern:
    """Register the pattern of ``trace_path`` and its renderer (the generated baseline)."""
    trace = json.loads(Path(trace_path).read_text())
    pattern = pattern_of(trace)
    source: list[str] = []

    def render(point: DesignPoint) -> str:
        require_renderable(pattern.name, pattern.supported, pattern.excluded, point)
        if not source:
            source.append(baseline_codegen.render(trace, point))
        return source[0]
    register_pattern(pattern, render)
    return pattern


class TracedAdapter:
    """cuco's reference contract over the user's workload, at the user's own shapes: ``make_inputs``
    is their input builder at (rank, world) (``dims`` and the harness's generator aside from it are
    unused: the shapes are fixed), ``reference`` runs their code on those tensors."""

    def __init__(self, anchor: str, *, inputs: tuple[str, ...], outputs: tuple[str, ...],
                 reference: Optional[str] = None, builder: Optional[str] = None, user_file: str = "reference.py"):
        self.user = Path(anchor).resolve().parent / user_file
        self.names, self.outputs = tuple(inputs), tuple(outputs)
        self.reference_name, self.builder_name = reference, builder
        self._workload = None
        self._scalars: dict[int, object] = {}
        self._dtype = None

    def workload(self):
        if self._workload is None:
            self._workload = workload_forms.load(self.user, reference=self.reference_name, inputs=self.builder_name)
        return self._workload

    def make_inputs(self, dims: dict, rank: int, world: int, dtype, gen) -> dict:
        values = op_trace.user_inputs(self.workload(), rank, world, gen, dtype)
        tensors = [v for v in values if hasattr(v, "shape")]
        if len(tensors) != len(self.names):
            raise SpecError(f"the input builder gave {len(tensors)} tensors at world size {world}, the trace "
                            f"{len(self.names)}", "run `cuco init --traced` again")
        self._scalars = {i: v for i, v in enumerate(values) if not hasattr(v, "shape")}
        self._dtype = dtype
        return dict(zip(self.names, tensors))

    def reference(self, inputs: dict, dims: dict, group) -> dict:
        # on copies: a workload that writes its inputs in place (an all_reduce of an input) must not
        # change the inputs the harness stores beside its outputs and hands the candidate
        tensors = iter(inputs[n].clone() for n in self.names)
        args = [self._scalars[i] if i in self._scalars else next(tensors)
                for i in range(len(self.names) + len(self._scalars))]
        outputs = self.workload().call(args, group)
        # every output in the inputs' floating dtype: the build's, as the candidate writes it (float64 in
        # the harness's calibration run, which must not round its exact outputs)
        dtype = next((x.dtype for x in inputs.values() if x.is_floating_point()), self._dtype)
        return {name: out.to(dtype) for name, out in zip(self.outputs, outputs)}


def adapter_text(*, inputs: tuple[str, ...], outputs: tuple[str, ...], reference: Optional[str],
                 builder: Optional[str]) -> str:
    """The ``cuco_workload.py`` of a traced spec folder."""
    return ('"""cuco\'s reference contract over the workload in reference.py at its own shapes (written by\n'
            '`cuco init --traced`; see cuco/traced_pattern.py)."""\n\nfrom cuco.traced_pattern import TracedAdapter\n\n'
            f"_A = TracedAdapter(__file__, inputs={tuple(inputs)!r}, outputs={tuple(outputs)!r}, "
            f"reference={reference!r}, builder={builder!r})\n"
            "make_inputs, reference = _A.make_inputs, _A.reference\n")
