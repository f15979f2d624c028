"""The GEMM + all-gather pattern (Megatron-LM's ColumnParallelLinear with gather_output=True): its
definition and cost model. Its kernel templates live in kernels/gemm_allgather."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import CHUNK_BYTES, Backend, Placement
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType

BIAS_ON, BIAS_OFF = 1, 2  # dims["bias"]: 1 adds bias_r in the GEMM epilogue, 2 does not


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank: the [M, K] x [K, N/n] GEMM (X, W_r and bias_r read, Y_r written once), then the
    peers' blocks placed into Y: read from where the all-gather put them and written into Y's
    column blocks, 2*M*(N - N/n) elements (a column block of a row-major [M, N] is strided, so no
    transfer lands in Y itself). The all-gather moves S = M*N*itemsize (docs/model.md); the own
    block (1/n of Y) needs no transfer."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    nl, e = n // world, dtype.itemsize
    bias = nl if dims.get("bias", BIAS_OFF) == BIAS_ON else 0
    return WorkloadCost(
        flops=2.0 * m * nl * k,
        hbm_bytes=float((m * k + k * nl + bias + m * nl + 2 * m * (n - nl)) * e),
        collective="allgather",
        comm_bytes=float(m * n * e),
        out_rows=m,
        out_cols=nl,
        local_fraction=1.0 / world,
        entry_handshake=True,  # a push into a peer waits until it entered the call
    )

def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("m", "n", "k", "bias") if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing} (bias: {BIAS_ON} adds the bias, {BIAS_OFF} does not)"]
    problems = [f"n={dims['n']} is not divisible by world size {world}"] if dims["n"] % world else []
    if dims["bias"] not in (BIAS_ON, BIAS_OFF):
        problems.append(f"bias={dims['bias']} is a flag: {BIAS_ON} adds the bias, {BIAS_OFF} does not")
    return problems

def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """ALL [world][M][N/n]: every rank's output block, the own one staged there by the GEMM."""
    return dims["m"] * (dims["n"] // world) * world * dtype.itemsize

def excluded(point: DesignPoint) -> Optional[str]:
    if (point.backend is Backend.HOST_NCCL and point.placement is Placement.SEQUENTIAL
            and point.chunk_bytes != CHUNK_BYTES[-1]):
        return "a sequential library all-gather moves the whole block at once: chunk_bytes has no effect " \
               f"(the family keeps only {CHUNK_BYTES[-1] // 1024}K)"
    return None

SUPPORTED: dict[str, tuple] = every_value()

PATTERN = Pattern(
    name="gemm_allgather",
    description="Column-parallel GEMM + all-gather (ColumnParallelLinear, gather_output=True): "
    "Y = [X @ W_0 | ... | X @ W_{n-1}] (+ bias) on every rank, X replicated, W and bias sharded by columns.",
    dims=("m", "n", "k", "bias"),
    inputs=("x", "w", "bias"),
    outputs=("y",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    notes=(
        "ALL [world][M][N/n] holds every rank's output block; the GEMM writes its own tile to Y and to ALL, "
        "chunks of ALL travel to the peers, which copy them into Y's column blocks.",
        "host_nccl runs one in-place library all-gather of ALL (stream_overlap: one per chunk, ALL chunk-major).",
    ),
    excluded=excluded,
    varied_dims=("m", "n", "k"),
)
register_pattern(PATTERN)
