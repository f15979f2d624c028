"""The full MoE layer under expert parallelism (Mixtral / Qwen3-MoE style): router GEMM, top-k with
softmax over the chosen logits, dispatch, SwiGLU experts, combine. It extends moe_dispatch_combine
(which takes the routing as an input) and shares its kernel templates; its definition and cost
live here, the router pieces in kernels/moe_router_swiglu."""

from __future__ import annotations

from typing import Mapping

from design_space.families import moe_dispatch_combine as base
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, register_pattern
from design_space.spec import DType

DIMS = ("t", "h", "f", "e", "k")

MAX_CHUNKS, SCRATCH_ROWS, MAX_WORKERS = base.MAX_CHUNKS, base.SCRATCH_ROWS, base.MAX_WORKERS


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank: the router GEMM [T, H] x [H, E]; T*K routed rows through the gate and up GEMMs
    ([H, F] each) and the down GEMM ([F, H]), the weighted sum. HBM: x and the router weight read,
    the fp32 logits written and read back, the local experts' weights once, rows read for dispatch,
    read and written by the experts, read by the combine, the SwiGLU intermediate written and read,
    the output written. S (alltoall) = dispatch + combine bytes one rank sends, T*K rows each way.
    The canonical routing is uniform over the experts (examples/moe_router_swiglu/reference.py), so
    the expected rows per rank are equal: imbalance 1."""
    t, h, f, e, k = (dims[d] for d in DIMS)
    size = dtype.itemsize
    router_bytes = size * (t * h + h * e) + 4 * 2 * t * e + 8 * 2 * t * k  # + ids and weights, written and read
    expert_bytes = size * (3 * (e // world) * h * f + 4 * t * k * h + 2 * t * k * f + t * h)
    return WorkloadCost(
        flops=2.0 * t * h * e + 2.0 * t * k * (3 * h * f + h),
        hbm_bytes=float(router_bytes + expert_bytes),
        collective="alltoall",
        comm_bytes=float(2 * t * k * h * size),
        out_rows=t * k,
        out_cols=h,
        local_fraction=1.0 / world,
        imbalance=1.0,
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
    if dims["h"] < dims["e"]:
        problems.append(f"h={dims['h']} hidden features cannot separate e={dims['e']} experts' logits "
                        "(the router's [h, e] weight has rank below e)")
    return problems


def workspace_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """moe_dispatch_combine's workspace (routing tables, expert intermediates), then the router's:
    fp32 logits [T, E], chosen expert ids [T*K] (int) and routing weights [T*K] (fp32). Mirrors
    problem() in the CUDA header."""
    a16 = lambda x: (x + 15) // 16 * 16  # noqa: E731
    pairs = dims["t"] * dims["k"]
    logits = a16(base.workspace_bytes(dims, world, dtype))
    ids = a16(logits + dims["t"] * dims["e"] * 4)
    weights = a16(ids + pairs * 4)
    return weights + pairs * 4


PATTERN = Pattern(
    name="moe_router_swiglu",
    description="Full MoE layer with expert parallelism (Mixtral / Qwen3-MoE): logits = x @ wg, top-k experts per "
    "token with softmax over the k chosen logits, tokens dispatched to their experts' ranks, SwiGLU experts "
    "(silu(v @ W1) * (v @ W3)) @ W2, routing-weighted results combined back.",
    dims=DIMS,
    inputs=("x", "wg", "w13", "w2"),
    outputs=("out",),
    supported=base.SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=base.symm_bytes,
    notes=(
        "Router: logits [T, E] = x @ wg on the tensor-core GEMM tile (fp32 accumulators, stored fp32); the same "
        "CTA then picks each of its rows' top k (ties to the lower expert id) and softmaxes the k chosen logits.",
        "w13 [E/n, H, 2F] holds each expert's gate (columns [0, F)) and up (columns [F, 2F)) projections side "
        "by side, as vLLM's w13 and transformers' gate_up_proj do: the device context takes at most 4 inputs.",
        "Expert = (silu(v @ W1) * (v @ W3)) @ W2: the gate and up tiles of the same columns accumulate side by "
        "side and meet in one epilogue; the intermediate is stored in the dtype, as the down GEMM's A operand.",
        "Dispatch, expert tiles, combine, signals and buffers are moe_dispatch_combine's (RECV / COMB [world][cap] "
        "rows, cap = T * min(K, E/n)); the routing comes from the router instead of an input.",
        "No multimem: the combine sums each token's own K results, there is no all-rank reduction.",
    ),
    excluded=base.excluded,
    workspace_bytes=workspace_bytes,
    varied_dims=("t", "h", "f"),
)
register_pattern(PATTERN)
