"""Costs traced from a reference: what a workload computes and moves, measured by running it.

``traced_cost(spec, dims, world)`` runs the spec's reference on gloo (``python -m cuco.cost_trace
JOB``, one process per rank) under torch's FLOP counter (``torch.utils.flop_counter``: matmuls,
batched matmuls, einsums, attention), with every torch.distributed collective and peer call
recorded with its bytes, and reads the model's ``WorkloadCost`` off it:

- ``flops``: the mean rank's counted FLOPs, ``imbalance`` the busiest rank's over the mean;
- ``collective`` and ``comm_bytes`` (S in the model's formulas, docs/model.md): the kind of call that
  moved the most bytes (all_gather* -> allgather with S the gathered tensor; reduce_scatter* ->
  reducescatter with S the input; all_reduce -> allreduce with S the tensor, or reducescatter when
  each rank then keeps a 1/n slice of it, the gloo stand-in for a reduce-scatter; all_to_all* ->
  alltoall with S the bytes a rank sends, over every call; send/isend -> p2p, summed);
- ``hbm_bytes``: the mean rank's inputs, outputs and received bytes (each read or written once);
- ``out_rows`` / ``out_cols``: the largest matrix product's output (else the first output) as rows
  of its last dimension; ``local_fraction`` 1/n for gather, scatter and all-to-all (a rank's own share
  needs no transfer), else 0;
- two phases (``WorkloadCost.then``) when the reference all-gathers, multiplies, then reduces (a
  tensor-parallel MLP): the second phase starts with the last matrix product before the reduce
  (``two_phases``).

Bytes of floating tensors count at the spec dtype's size (a reference that reduces in fp32 for
accuracy stands for a kernel that moves the dtype). What a trace cannot know: work the reference
does that a kernel would skip (a causal mask applied to full scores counts the full product), and
how the reference's own collective choice differs from the family's design (ring attention's
reference all-gathers K and V where the family rotates them: the same bytes reach each rank).

Any workload gets a bound and a baseline this way, a registered pattern without a cost function of
its own included (``traced_cost_function``); tests/cuco/test_cost_trace.py holds every family's
hand-written cost against its traced one.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Optional

from design_space.model import WorkloadCost
from design_space.spec import DType, KernelSpec

TRACE_TIMEOUT_S = 300.0
_GATHER = ("all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_single")
_SCATTER = ("reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "reduce_scatter_single")
_ALLTOALL = ("all_to_all", "all_to_all_single")
_P2P = ("send", "isend")


_ITEMSIZE = [2]  # the spec dtype's: a reference that moves fp32 for accuracy stands for a kernel moving the dtype


def _nbytes(x) -> int:
    if isinstance(x, (list, tuple)):
        return sum(_nbytes(t) for t in x)
    if not hasattr(x, "numel"):
        return 0
    size = x.element_size()
    return int(x.numel() * (min(size, _ITEMSIZE[0]) if x.is_floating_point() else size))


def _matmul_shapes(flops_now: Callable[[], int]):
    """A dispatch mode that keeps the output shape of the largest matrix product (the GEMM whose
    tiles the model's wave quantisation counts) and, per product in order, the FLOPs counted once
    it ran, the bytes it read and wrote, its work and output shape (where two phases split)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    products = {aten.mm.default, aten.bmm.default, aten.addmm.default, aten.baddbmm.default}

    class Shapes(TorchDispatchMode):
        best: tuple = (0, None)

        def __init__(self):
            super().__init__()
            self.products: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in products:
                inner = args[-1].shape[-2]
                work = out.numel() * inner
                if work > self.best[0]:
                    self.best = (work, list(out.shape))
                moved = _nbytes([a for a in args if hasattr(a, "numel")]) + _nbytes(out)
                self.products.append((int(flops_now()), moved, int(work), list(out.shape)))
            return out
    return Shapes()


def _recorder(dist, log: list, flops_now: Callable[[], int]):
    """Wrap the collectives of ``dist`` so each call appends (kind, S bytes, received bytes, FLOPs
    counted before it)."""
    world = dist.get_world_size()

    def wrap(name: str, kind: str, size: Callable):
        original = getattr(dist, name, None)
        if original is None:
            return

        def call(*args, **kwargs):
            s, received = size(*args, **kwargs)
            log.append((kind, s, received, int(flops_now())))
            return original(*args, **kwargs)
        setattr(dist, name, call)

    def gather(out, inp=None, *a, **k):
        s = _nbytes(out)
        return s, s - s // world
    for n in _GATHER:
        wrap(n, "allgather", gather)
    for n in _SCATTER:
        wrap(n, "reducescatter", lambda out, inp=None, *a, **k: (_nbytes(inp), _nbytes(out) * (world - 1)))
    wrap("all_reduce", "allreduce", lambda t, *a, **k: (_nbytes(t), _nbytes(t)))
    for n in _ALLTOALL:
        wrap(n, "alltoall", lambda out, inp=None, *a, **k: (_nbytes(inp), _nbytes(out)))
    for n in _P2P:
        wrap(n, "p2p", lambda t, *a, **k: (_nbytes(t), 0))
    for n in ("recv", "irecv"):
        wrap(n, "recv", lambda t, *a, **k: (0, _nbytes(t)))


def run(job: dict, rank: int) -> None:
    import torch
    import torch.distributed as dist
    from torch.utils.flop_counter import FlopCounterMode

    from evaluator.reference_worker import TORCH_DTYPES, load_callable

    world = job["world"]
    dist.init_process_group("gloo", init_method=f"file://{job['init_file']}", rank=rank, world_size=world)
    try:
        make_inputs = load_callable(job["inputs"], job["search_path"])
        reference = load_callable(job["reference"], job["search_path"])
        dtype = getattr(torch, TORCH_DTYPES[job["dtype"]])
        _ITEMSIZE[0] = torch.empty((), dtype=dtype).element_size()
        inputs = make_inputs(dict(job["dims"]), rank, world, dtype, torch.Generator().manual_seed(77 + rank))
        log: list = []
        counter = FlopCounterMode(display=False)
        _recorder(dist, log, counter.get_total_flops)
        shapes = _matmul_shapes(counter.get_total_flops)
        with counter, shapes:
            outputs = reference(dict(inputs), dict(job["dims"]), dist.group.WORLD)
        first = next(iter(outputs.values()))
        mine = {"flops": int(counter.get_total_flops()), "in": _nbytes(list(inputs.values())),
                "out": _nbytes(list(outputs.values())), "out_shape": list(first.shape),
                "gemm_shape": shapes.best[1], "calls": list(log), "products": shapes.products}
        _write_from_rank0(dist, mine, world, rank, Path(job["out"]))
    finally:
        dist.destroy_process_group()


def _write_from_rank0(dist, mine: dict, world: int, rank: int, out: Path) -> None:
    """Every rank's record gathered to rank 0, which writes the list as JSON."""
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    if rank == 0:
        out.write_text(json.dumps(everyone))


def traced_cost(spec: KernelSpec, dims: Mapping[str, int], world: int) -> WorkloadCost:
    """The spec's reference traced at ``dims`` and ``world`` ranks (see the module doc)."""
    from evaluator.reference import run_worker  # noqa: PLC0415
    from design_space.errors import SpecError  # noqa: PLC0415

    work = Path(tempfile.mkdtemp(prefix="cuco-trace-"))
    try:
        job = {"world": world, "init_file": str(work / "pg"), "out": str(work / "trace.json"), "dims": dict(dims),
               "inputs": spec.inputs, "reference": spec.reference, "search_path": list(spec.search_path),
               "dtype": spec.dtype.value}
        (work / "job.json").write_text(json.dumps(job))
        code, out = run_worker("cuco.cost_trace", work / "job.json", TRACE_TIMEOUT_S, f"tracing {spec.name}", world)
        if code != 0 or not (work / "trace.json").is_file():
            tail = " | ".join(out.decode(errors="replace").strip().splitlines()[-4:])[-800:]
            raise SpecError(f"tracing the reference of {spec.name} failed at world size {world}: {tail}",
                            "run the reference by hand on gloo and fix the error")
        ranks = json.loads((work / "trace.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cost_of(ranks, world)


def cost_of(ranks: list[dict], world: int) -> WorkloadCost:
    """A WorkloadCost from each rank's trace (flops, bytes in/out, first output's shape, calls);
    two phases when the reference all-gathers, computes, then reduces (``two_phases``)."""
    split = two_phases(ranks, world)
    if split is not None:
        return split
    flops = [r["flops"] for r in ranks]
    mean = sum(flops) / len(flops)
    per_rank: list[dict[str, float]] = []
    received = []
    for r in ranks:
        received.append(sum(c[2] for c in r["calls"]))
        mine: dict[str, float] = {}
        for kind, s, *_ in r["calls"]:
            mine[kind] = mine.get(kind, 0) + s
        mine.pop("recv", None)
        per_rank.append(mine)
    kinds = {k for m in per_rank for k in m}
    # S: a collective's mean over the ranks (uneven all-to-all splits included); p2p: the busiest sender's
    moved = {k: (max if k == "p2p" else _mean)([m.get(k, 0.0) for m in per_rank]) for k in kinds}
    kind = max(moved, key=lambda k: moved[k]) if moved else "p2p"
    s = moved.get(kind, 0.0)
    out_bytes = ranks[0]["out"]
    if kind == "allreduce" and out_bytes * world <= s * 1.01 and out_bytes > 0:
        kind = "reducescatter"  # every rank keeps 1/n of the sum: a reduce-scatter (gloo has none)
    rows, cols = _rows_cols(ranks[0].get("gemm_shape") or ranks[0]["out_shape"] or [1])
    hbm = sum(r["in"] + r["out"] + rec for r, rec in zip(ranks, received)) / len(ranks)
    return WorkloadCost(flops=float(mean), hbm_bytes=float(hbm), collective=kind, comm_bytes=float(s),
                        out_rows=rows, out_cols=cols, local_fraction=_local_fraction(kind, world),
                        imbalance=max(flops) / mean if mean > 0 else 1.0)


def _rows_cols(shape) -> tuple[int, int]:
    """A product's output as rows of its last dimension."""
    cols = shape[-1]
    return max(1, int(round(_prod(shape) / max(1, cols)))), int(cols)


def _local_fraction(kind: str, world: int) -> float:
    """A rank's own share of a gather, scatter or all-to-all needs no transfer."""
    return 1.0 / world if kind in ("allgather", "reducescatter", "alltoall") else 0.0


_REDUCES = ("reducescatter", "allreduce")


def _boundary(r: dict) -> Optional[int]:
    """The FLOPs counted when one rank's second phase starts, or None when its calls are not
    all-gathers then reduces with at least two matrix products between them: the second phase
    starts with the last product before the reduce (the GEMM whose partial is reduced)."""
    kinds = [c[0] for c in r["calls"]]
    if not kinds or kinds[0] != "allgather" or set(kinds) - {"allgather", *_REDUCES}:
        return None
    first = next((i for i, k in enumerate(kinds) if k in _REDUCES), None)
    if first is None or "allgather" in kinds[first:]:
        return None
    gathered, reduced = r["calls"][first - 1][3], r["calls"][first][3]
    between = [p[0] for p in r.get("products", ()) if gathered < p[0] <= reduced]
    return between[-2] if len(between) >= 2 else None


def two_phases(ranks: list[dict], world: int) -> Optional[WorkloadCost]:
    """A reference that all-gathers, multiplies, then reduces (a tensor-parallel MLP) as two phases
    (docs/model.md, "Two phases"): the all-gather with the products before the last one, then that
    product with the reduce. Each phase has its own FLOPs (the counter at the split), collective and
    S; HBM bytes (inputs, outputs and received bytes, as for one phase) are split in proportion to
    the bytes each phase's products read and write. None when the trace is not of that form."""
    bounds = [_boundary(r) for r in ranks]
    if any(b is None for b in bounds):
        return None
    mine = [[p for p in r["products"] if p[0] <= b] for r, b in zip(ranks, bounds)]
    theirs = [[p for p in r["products"] if p[0] > b] for r, b in zip(ranks, bounds)]
    moved = [_mean([sum(p[1] for p in ps) for ps in side]) for side in (mine, theirs)]
    share = moved[0] / sum(moved) if sum(moved) > 0 else 0.5
    hbm = _mean([r["in"] + r["out"] + sum(c[2] for c in r["calls"]) for r in ranks])
    s_reduce = _mean([sum(c[1] for c in r["calls"] if c[0] in _REDUCES) for r in ranks])
    kinds = {c[0] for c in ranks[0]["calls"] if c[0] in _REDUCES}
    # an all-reduce after which every rank keeps 1/n of the sum is a reduce-scatter (gloo has none)
    out = ranks[0]["out"]
    kind = "reducescatter" if kinds == {"reducescatter"} or 0 < out * world <= s_reduce * 1.01 else "allreduce"
    down = _phase([r["flops"] - b for r, b in zip(ranks, bounds)], hbm * (1 - share), kind, s_reduce,
                  max(theirs[0], key=lambda p: p[2])[3], world)
    return _phase(bounds, hbm * share, "allgather",
                  _mean([sum(c[1] for c in r["calls"] if c[0] == "allgather") for r in ranks]),
                  max(mine[0], key=lambda p: p[2])[3], world, then=down)


def _phase(flops: list, hbm: float, kind: str, s: float, shape, world: int,
           then: Optional[WorkloadCost] = None) -> WorkloadCost:
    mean = _mean(flops)
    rows, cols = _rows_cols(shape)
    return WorkloadCost(flops=float(mean), hbm_bytes=float(hbm), collective=kind, comm_bytes=float(s), out_rows=rows,
                        out_cols=cols, local_fraction=_local_fraction(kind, world),
                        imbalance=max(flops) / mean if mean > 0 else 1.0, then=then)


def _mean(xs) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= int(x)
    return out


def traced_cost_function(spec: KernelSpec) -> Callable[[Mapping[str, int], int, DType], WorkloadCost]:
    """A ``Pattern.cost`` for a pattern that has none: its spec's reference, traced (cached per call)."""
    memo: dict = {}

    def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
        key = (tuple(sorted(dims.items())), world)
        if key not in memo:
            memo[key] = traced_cost(spec, dims, world)
        return memo[key]
    return cost


if __name__ == "__main__":
    import sys

    from evaluator.reference_worker import fork_ranks

    sys.exit(fork_ranks(json.loads(Path(sys.argv[1]).read_text()), run))
