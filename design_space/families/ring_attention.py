"""The ring-attention pattern (context-parallel attention): its definition and cost model. Rank r
holds Q_r, K_r, V_r [H, S/n, D]; KV blocks travel around the ring in n - 1 steps while each rank
folds them into an online softmax; O_r = softmax(Q_r K^T / sqrt(D)) V. Its kernel templates live
in kernels/ring_attention."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import CHUNK_BYTES, Backend, Placement
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType


MAX_D = 128  # the templates' MAX_D: the width of the P V output tile; Q rows are staged in shared memory

def _pairs(sl: int, n: int, causal: bool) -> list[float]:
    """(query, key) pairs each rank scores: causal rank r sees r whole blocks and half its own."""
    if not causal:
        return [float(sl * sl * n)] * n
    return [r * sl * sl + sl * (sl + 1) / 2 for r in range(n)]

def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank (the mean rank; ``imbalance`` says how much more the busiest, last rank does)."""
    h, s, d, causal = dims["h"], dims["s"], dims["d"], dims["mask"] == 2
    n, e = world, dtype.itemsize
    sl = s // n
    pairs = _pairs(sl, n, causal)
    mean = sum(pairs) / n
    block = 2 * h * sl * d * e  # one K/V block
    blocks_read = (n + 1) / 2 if causal else n  # causal ranks skip the blocks of later positions
    own = sl * (sl + 1) / 2 if causal else sl * sl
    return WorkloadCost(
        flops=4.0 * h * d * mean,  # Q K^T and P V, 2 flops per multiply-add each
        hbm_bytes=float(2 * h * sl * d * e + blocks_read * block),  # Q in, O out, the K/V blocks folded in
        collective="p2p",
        comm_bytes=float((n - 1) * block),  # S: every block a rank passes on over the run
        out_rows=h * sl,
        out_cols=d,
        local_fraction=own / mean,  # the own block needs no transfer
        imbalance=max(pairs) / mean,
        steps=n - 1,
    )

def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [k for k in ("h", "s", "d", "mask") if k not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    problems = []
    if dims["s"] % world:
        problems.append(f"s={dims['s']} is not divisible by world size {world}")
    if dims["d"] > MAX_D:
        problems.append(f"d={dims['d']} exceeds {MAX_D}: the templates keep a head's row in shared memory")
    if dims["mask"] not in (1, 2):
        problems.append(f"mask={dims['mask']} must be 1 (full attention) or 2 (causal mask)")
    return problems

def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    # world + 1 KV slots: receive slots (all of them when a design moves the whole ring before
    # or beside the compute, or the gathered blocks of host_nccl) and the own block packed.
    return (world + 1) * 2 * dims["h"] * (dims["s"] // world) * dims["d"] * dtype.itemsize

def workspace_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    # Online-softmax state between launches: acc[D], m, l per query row, fp32.
    return dims["h"] * (dims["s"] // world) * (dims["d"] + 2) * 4

def excluded(point: DesignPoint) -> Optional[str]:
    if (point.backend is Backend.HOST_NCCL and point.placement is Placement.SEQUENTIAL
            and point.chunk_bytes != CHUNK_BYTES[0]):
        return ("host_nccl sequential moves every block with one all-gather, so chunk_bytes changes nothing and "
                f"other values would duplicate points: use chunk {CHUNK_BYTES[0] // 1024}K")
    return None

SUPPORTED: dict[str, tuple] = every_value(without_backends=(Backend.MULTIMEM,))  # nothing to reduce or broadcast

PATTERN = Pattern(
    name="ring_attention",
    description="Context-parallel ring attention: O_r = softmax(Q_r K^T / sqrt(D)) V over the whole sequence; "
                "Q, K, V sharded by sequence [H, S/n, D], KV blocks passed around the ring in n - 1 steps.",
    dims=("h", "s", "d", "mask"),  # mask: 1 full, 2 causal (dims are positive)
    inputs=("q", "k", "v"),
    outputs=("o",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    notes=(
        "Each rank passes on at step t the block it received at step t - 1: every link carries one block "
        "per step, n - 1 dependent steps.",
        "Double-buffered designs cycle two receive slots and credit a slot back to the left neighbour once "
        "it is folded in and passed on; sequential and split_put_wait/global_barrier use one slot per step.",
        "Causal ranks skip the blocks of later positions: the last rank does about twice the mean work "
        "(no zig-zag load balancing).",
        "Compute is flash-attention style on the tensor-core GEMM tile: per 64-row query tile and 64-row K/V tile, "
        "S = Q K^T and O += P V are tile calls with fp32 accumulators; P is rounded to the dtype in shared memory.",
    ),
    excluded=excluded,
    workspace_bytes=workspace_bytes,
    varied_dims=("h", "s", "d"),
)
register_pattern(PATTERN)
