"""The MoE dispatch + expert GEMMs + combine pattern (DeepEP-style expert parallelism): its
definition, skewed-routing model and cost. Its kernel templates live in kernels/moe_dispatch_combine."""

from __future__ import annotations

import math
from typing import Mapping, Optional

from design_space.dimensions import Backend, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType

B, P, S = Backend, Placement, SyncScope


DIMS = ("t", "h", "f", "e", "k", "skew")

MAX_CHUNKS = 48  # frozen in the CUDA header: chunk signals per (source, destination) pair

SCRATCH_ROWS = 64  # frozen in the CUDA header: rows of one worker's expert intermediate (one GEMM tile's BM)

MAX_WORKERS = 256  # frozen in the CUDA header: workers (CTAs) that own an intermediate scratch

def _stride(e: int) -> int:
    """A step coprime with e near e / golden ratio: the popularity order visits experts spread
    over all ranks, as a load balancer would leave the hot ones."""
    a = max(1, round(0.618 * e))
    while math.gcd(a, e) != 1:
        a += 1
    return a

def expert_popularity(e: int, skew: int) -> list[float]:
    """Relative routing weight of each expert: Zipf with exponent skew/100 over popularity rank
    (e_id * stride) mod e. skew=1 is nearly uniform, 100 is classic Zipf."""
    a = _stride(e)
    return [1.0 / (1 + (i * a) % e) ** (skew / 100.0) for i in range(e)]

def choice_probabilities(weights: list[float], k: int) -> list[float]:
    """Probability that each expert is among a token's k distinct choices, approximated as
    k * w / sum(w) with experts capped at 1 and the rest renormalised."""
    p = [0.0] * len(weights)
    free, budget = set(range(len(weights))), float(k)
    while free and budget > 0:
        total = sum(weights[i] for i in free)
        share = {i: budget * weights[i] / total for i in free}
        capped = [i for i in free if share[i] >= 1.0]
        if not capped:
            for i in free:
                p[i] = share[i]
            break
        for i in capped:
            p[i] = 1.0
            free.discard(i)
            budget -= 1.0
    return p

def rank_loads(dims: Mapping[str, int], world: int) -> list[float]:
    """Expected rows each rank's experts receive per source token (experts e live on rank e // (E/n))."""
    e, k = dims["e"], dims["k"]
    probs = choice_probabilities(expert_popularity(e, dims["skew"]), k)
    el = e // world
    return [sum(probs[r * el:(r + 1) * el]) for r in range(world)]

def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank, the mean rank: T*K routed rows through two expert GEMMs [H, F] and [F, H], the
    weighted sum; HBM: the local experts' weights once, rows read for dispatch, read and written by
    the experts, read by the combine, the output written. S (alltoall) = dispatch + combine bytes
    one rank sends, T*K rows each way. imbalance = busiest rank's expected rows / mean."""
    t, h, f, e, k = (dims[d] for d in ("t", "h", "f", "e", "k"))
    size = dtype.itemsize
    loads = rank_loads(dims, world)
    mean = sum(loads) / len(loads)
    return WorkloadCost(
        flops=2.0 * t * k * (2 * h * f + h),
        hbm_bytes=float(size * (2 * (e // world) * h * f + 4 * t * k * h + t * h)),
        collective="alltoall",
        comm_bytes=float(2 * t * k * h * size),
        out_rows=t * k,
        out_cols=h,
        local_fraction=1.0 / world,
        imbalance=max(loads) / mean if mean > 0 else 1.0,
        steps=2,
    )

def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in DIMS if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    problems = []
    if dims["e"] % world:
        problems.append(f"e={dims['e']} experts do not spread evenly over world size {world}")
    if dims["k"] > dims["e"]:
        problems.append(f"k={dims['k']} choices per token exceed e={dims['e']} experts")
    return problems

def _cap(dims: Mapping[str, int], world: int) -> int:
    return dims["t"] * min(dims["k"], dims["e"] // world)

def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """Headers (in, out, all-gathered), RECV and COMB [world][cap] rows, SEND [T*K + cap] rows;
    mirrors problem() in the CUDA header."""
    row = dims["h"] * dtype.itemsize
    hi = (2 + dims["e"] // world + MAX_CHUNKS + 1) // 2 * 2
    headers = (2 + world) * world * hi * 8
    blocks = world * _cap(dims, world) * row
    a16 = lambda x: (x + 15) // 16 * 16  # noqa: E731
    return a16(a16(headers + blocks) + blocks) + (dims["t"] * dims["k"] + _cap(dims, world)) * row

def workspace_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """Routing tables (counts, segments, bases, pair positions, tokens) and MAX_WORKERS expert
    intermediates of SCRATCH_ROWS x F elements (the dtype: the second GEMM's A operand)."""
    a16 = lambda x: (x + 15) // 16 * 16  # noqa: E731
    pairs = dims["t"] * dims["k"]
    tables = a16(a16(dims["e"] * 4) + dims["e"] * 4) + world * 4
    tables = a16(a16(a16(a16(tables) + pairs * 4) + pairs * 4) + pairs * 4)
    return tables + MAX_WORKERS * SCRATCH_ROWS * dims["f"] * dtype.itemsize

def excluded(point: DesignPoint) -> Optional[str]:
    if point.backend is B.COPY_ENGINE and point.placement is P.SPLIT_PUT_WAIT and point.sync_scope is S.GLOBAL_BARRIER:
        return ("copy_engine with a global barrier leaves the kernels no device signal to wait on late, so "
                "split_put_wait would render the same program as copy_engine/stream_overlap/global_barrier")
    return None

SUPPORTED: dict[str, tuple] = every_value(without_backends=(Backend.MULTIMEM,))  # nothing to reduce or broadcast

PATTERN = Pattern(
    name="moe_dispatch_combine",
    description="MoE expert parallelism (DeepEP-style): dispatch each token to the ranks of its top-k experts "
    "(skewed, variable counts), run the experts' GEMMs, combine the routing-weighted results back.",
    dims=DIMS,
    inputs=("x", "route", "w1", "w2"),
    outputs=("out",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    notes=(
        "Expert = silu(x @ W1_e) @ W2_e: one [H, F] GEMM with the SiLU in its epilogue, one [F, H] GEMM, both "
        "on the tensor-core GEMM tile (64 x 128 output tiles, fp32 accumulators); the intermediate is stored in "
        "the dtype, as the second GEMM's A operand.",
        "route [T, 2K] carries K expert ids as exact small integers (bf16 holds every id up to 256) and K weights.",
        "RECV / COMB [world][cap] rows, cap = T * min(K, E/n): room for the worst routing; signals count rows "
        "against cumulative targets, since counts change every call.",
        "No multimem: the combine sums each token's own K results, there is no all-rank reduction.",
    ),
    excluded=excluded,
    workspace_bytes=workspace_bytes,
    varied_dims=("t", "h", "f"),
)
register_pattern(PATTERN)
