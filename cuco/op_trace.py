"""Recording a user's workload at the aten level, for the generated host-driven baseline
(``cuco init --traced``; cuco/traced_ops.py lowers the record, cuco/baseline_codegen.py writes CUDA).

``record(path, worlds=...)`` runs the workload on gloo at each world size (``python -m
cuco.op_trace JOB``, one process per rank, torch imported once), on the user's own inputs: their
input builder at that world, floating inputs cast to the spec's dtype and made contiguous (what the
spec's harness hands a candidate; ``user_inputs``). Under a ``TorchDispatchMode`` every aten op and
every torch.distributed call (the ``c10d`` ops, with the reduce op and group seen by a wrapper
around ``torch.distributed``) is kept in order, per rank, with concrete shapes, strides and dtypes.

Memory is recorded, not just values: each tensor is (storage, element offset, shape, strides,
dtype), storages numbered by first appearance (the inputs first, then what each op allocates). A
view op (reshape, permute, slice, split, expand ...) allocates and writes nothing, so it is not
recorded at all: the tensors after it simply carry its geometry. An op is kept when it allocates
a storage, writes one (in-place and ``out=`` ops, collectives), or returns no tensor (``.item()``:
the lowering refuses it). A tensor the workload did not get from its inputs or an op (a constant
built outside the call) is kept by value when it holds one element, and named otherwise.

Beside the ops, the same run measures what cuco/cost_trace.py measures (FLOPs, bytes, every
collective's size), so the pattern's cost comes from the trace's own numbers.
"""

from __future__ import annotations

import inspect
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

TRACE_TIMEOUT_S = 300.0
# c10d ops write these arguments (their schemas carry no alias annotations)
C10D_WRITES = {"allreduce_": ("tensors",), "allreduce_coalesced_": ("tensors",), "allgather_": ("output_tensors",),
               "_allgather_base_": ("output_tensor",), "allgather_into_tensor_coalesced_": ("outputs",),
               "alltoall_base_": ("output",), "alltoall_": ("output_tensors",), "broadcast_": ("tensors",),
               "recv_": ("tensors",), "recv_any_source_": ("tensors",), "reduce_scatter_": ("output_tensors",),
               "_reduce_scatter_base_": ("output_tensor",), "reduce_": ("tensors",), "gather_": ("output_tensors",),
               "scatter_": ("output_tensors",)}
# torch.distributed calls wrapped to see what the c10d op cannot show (its reduce op, its group)
_DIST_CALLS = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_to_all", "all_to_all_single", "broadcast",
               "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter", "send", "recv", "isend",
               "irecv")


def user_inputs(workload, rank: int, world: int, gen, dtype) -> list:
    """One rank's inputs as the spec's harness gives them: floating tensors in ``dtype``, every
    tensor contiguous (the harness stores inputs as contiguous bytes)."""
    import torch

    out = []
    for x in workload.build(rank, world, gen):
        if torch.is_tensor(x):
            x = (x.to(dtype) if x.is_floating_point() else x).contiguous()
        out.append(x)
    return out


class _Storages:
    """Storages numbered by first appearance; every tensor seen is kept alive, so no address is
    reused while the workload runs."""

    def __init__(self) -> None:
        self.table: list[dict] = []
        self.ids: dict[int, int] = {}
        self.keep: list = []

    def add(self, t, entry: dict) -> int:
        self.keep.append(t)
        key = t.untyped_storage().data_ptr()
        if key not in self.ids:
            self.ids[key] = len(self.table)
            self.table.append({**entry, "nbytes": int(t.untyped_storage().nbytes())})
        return self.ids[key]

    def known(self, t) -> bool:
        return t.untyped_storage().data_ptr() in self.ids

    def ref(self, t) -> dict:
        self.keep.append(t)
        return {"storage": self.ids[t.untyped_storage().data_ptr()], "offset": int(t.storage_offset()),
                "shape": list(t.shape), "stride": list(t.stride()), "dtype": str(t.dtype).replace("torch.", "")}


def _encode(value: Any, storages: _Storages, produced: bool = False) -> Any:
    """An argument or result as JSON: tensors as refs (a storage seen first in a result is the
    op's own allocation; first in an argument, a constant from outside the call)."""
    import torch

    if torch.is_tensor(value):
        if value.numel() == 0:
            return {"empty": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")}
        if not storages.known(value):
            entry = {"kind": "ws"} if produced else {"kind": "const", "shape": list(value.shape),
                                                      "values": value.flatten()[:1].tolist()}
            storages.add(value, entry)
        return {"tensor": storages.ref(value)}
    if isinstance(value, (list, tuple)):
        return [_encode(v, storages, produced) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and value != value:
            return "nan"
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout, torch.device)):
        return str(value).replace("torch.", "")
    return None  # a process group, a reduce op, a work handle: what matters is in the note


def _bind(func, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by their schema names, defaults filled in."""
    bound: dict = {}
    params = func._schema.arguments
    for a, v in zip(params, args):
        bound[a.name] = v
    for a in params:
        if a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        elif a.name not in bound and a.has_default_value():
            bound[a.name] = a.default_value
    return bound


def _recorder_mode(storages: _Storages, ops: list, notes: list):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            namespace, _, name = func._schema.name.partition("::")
            writes = [a.name for a in func._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
            if namespace == "c10d":
                writes = list(C10D_WRITES.get(name, ()))
            bound = _bind(func, args, kwargs)
            encoded = {k: _encode(v, storages) for k, v in bound.items()}
            before = len(storages.table)
            result = _encode(out, storages, produced=True)
            allocates = len(storages.table) > before
            tensors_out = any(torch.is_tensor(x) for x in (out if isinstance(out, (list, tuple)) else [out]))
            if allocates or writes or namespace == "c10d" or not tensors_out:
                entry = {"op": f"{namespace}::{name}", "overload": func._overloadname, "args": encoded,
                         "writes": writes, "result": result}
                if namespace == "c10d" and name != "barrier":
                    entry["note"] = notes.pop(0) if notes else {}
                ops.append(entry)
            return out
    return Recorder()


def _wrap_dist(dist, notes: list, world: int) -> None:
    """Note each torch.distributed call's reduce op and group (its c10d op cannot show them)."""
    for name in _DIST_CALLS:
        original = getattr(dist, name, None)
        if original is None:
            continue

        def call(*args, __original=original, __name=name, **kwargs):
            try:
                bound = inspect.signature(__original).bind(*args, **kwargs).arguments
            except TypeError:
                bound = {}
            group = bound.get("group")
            op = bound.get("op")
            notes.append({"call": __name, "op": str(op).split(".")[-1].lower() if op is not None else "sum",
                          "group": "world" if group in (None, dist.group.WORLD) and
                          (group is None or dist.get_world_size(group) == world) else "subgroup"})
            return __original(*args, **kwargs)
        setattr(dist, name, call)


def run(job: dict, rank: int) -> None:
    """One rank: build the inputs, run the workload under the recorder and the cost counters."""
    import torch
    import torch.distributed as dist
    from torch.utils.flop_counter import FlopCounterMode

    from cuco import cost_trace, workload_forms
    from evaluator.reference_worker import TORCH_DTYPES

    world = job["world"]
    dist.init_process_group("gloo", init_method=f"file://{job['init_file']}", rank=rank, world_size=world)
    try:
        workload = workload_forms.load(Path(job["path"]), reference=job["reference"], inputs=job["inputs"])
        dtype = getattr(torch, TORCH_DTYPES[job["dtype"]])
        cost_trace._ITEMSIZE[0] = torch.empty((), dtype=dtype).element_size()
        inputs = user_inputs(workload, rank, world, torch.Generator().manual_seed(77 + rank), dtype)
        storages, ops, notes, log = _Storages(), [], [], []
        refs = [_input_ref(x, i, storages) for i, x in enumerate(inputs)]
        _wrap_dist(dist, notes, world)
        counter = FlopCounterMode(display=False)
        cost_trace._recorder(dist, log, counter.get_total_flops)
        shapes = cost_trace._matmul_shapes(counter.get_total_flops)
        with counter, shapes, _recorder_mode(storages, ops, notes):
            outputs = workload.call(list(inputs), dist.group.WORLD)
        mine = {"inputs": refs, "outputs": [_encode(o, storages) for o in outputs], "storages": storages.table,
                "ops": ops, "cost": _cost_record(counter, shapes, log, inputs, outputs)}
        cost_trace._write_from_rank0(dist, mine, world, rank, Path(job["out"]))
    finally:
        dist.destroy_process_group()


def _input_ref(x, index: int, storages: _Storages) -> Any:
    import torch

    if not torch.is_tensor(x):
        return {"scalar": x if isinstance(x, (bool, int, float)) else None}
    if x.numel() == 0:
        return {"empty": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
    storages.add(x, {"kind": "input", "index": index})
    return {"tensor": storages.ref(x)}


def _cost_record(counter, shapes, log: list, inputs: list, outputs: list) -> dict:
    """What cuco/cost_trace.py reads off one rank (its ``cost_of`` turns the ranks' into a cost)."""
    from cuco.cost_trace import _nbytes

    tensors = [o for o in outputs if hasattr(o, "shape")]
    first = tensors[0] if tensors else None
    return {"flops": int(counter.get_total_flops()), "in": _nbytes(list(inputs)), "out": _nbytes(tensors),
            "out_shape": list(first.shape) if first is not None else [1], "gemm_shape": shapes.best[1],
            "calls": list(log), "products": shapes.products}


def record(path: Path, *, worlds: Sequence[int], reference: Optional[str], inputs: Optional[str],
           dtype: str = "bf16") -> dict[int, list[dict]]:
    """Each world's per-rank records of the workload at ``path`` (see the module doc)."""
    from design_space.errors import SpecError
    from evaluator.reference import last_lines, launch_jobs

    work = Path(tempfile.mkdtemp(prefix="cuco-optrace-"))
    try:
        jobs = [{"path": str(Path(path).resolve()), "reference": reference, "inputs": inputs, "world": world,
                 "dtype": dtype, "init_file": str(work / f"pg{world}"), "out": str(work / f"trace{world}.json")}
                for world in worlds]
        failed, text = launch_jobs("cuco.op_trace", jobs, work / "jobs.json", TRACE_TIMEOUT_S, f"tracing {Path(path).name}",
                                lambda j: Path(j["out"]).is_file())
        if failed is not None:
            raise SpecError(f"running {Path(path).name} on gloo at world size {failed['world']} failed: "
                            f"{last_lines(text)}",
                            "run it by hand with torchrun --nproc-per-node 2 (gloo) and fix the error")
        return {job["world"]: json.loads(Path(job["out"]).read_text()) for job in jobs}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import sys

    from evaluator.reference_worker import run_jobs

    sys.exit(run_jobs(json.loads(Path(sys.argv[1]).read_text()), run))
