"""The GEMM + reduce-scatter pattern (row-parallel GEMM, FLUX's GEMM+RS): its definition and cost
model. Its kernel templates live in kernels/gemm_reducescatter."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType

B, P, S = Backend, Placement, SyncScope


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank: the [M, K/n] x [K/n, N] partial GEMM (inputs read, partial written once) and a
    reduce-scatter of the full [M, N] partial (S = M*N*itemsize, docs/model.md)."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    kl = k // world
    e = dtype.itemsize
    return WorkloadCost(
        flops=2.0 * m * n * kl,
        hbm_bytes=float((m * kl + kl * n + m * n) * e),
        collective="reducescatter",
        comm_bytes=float(m * n * e),
        out_rows=m,
        out_cols=n,
        local_fraction=1.0 / world,  # the own row block needs no transfer
        entry_handshake=True,  # a push (multimem: STAGE's rewrite) waits for the peers to enter the call
    )

def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("m", "n", "k") if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    return [f"{d}={dims[d]} is not divisible by world size {world}" for d in ("m", "k") if dims[d] % world]

def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """STAGE [M][N] (this rank's partial) + RECV [world][M/n][N] (the peers' partials of its rows)."""
    return 2 * dims["m"] * dims["n"] * dtype.itemsize

def excluded(point: DesignPoint) -> Optional[str]:
    if point.backend is B.MULTIMEM and point.placement is P.SPLIT_PUT_WAIT and point.sync_scope is S.GLOBAL_BARRIER:
        return ("multimem puts nothing (the owner reads the partials through the switch), so with a global "
                "barrier there is no early put to split from a late wait: that design is multimem/sequential")
    return None

SUPPORTED: dict[str, tuple] = every_value()

PATTERN = Pattern(
    name="gemm_reducescatter",
    description="Row-parallel GEMM + reduce-scatter: C_r = sum_j (A_j @ B_j)[rows of rank r], A sharded by "
    "columns (K), B by rows.",
    dims=("m", "n", "k"),
    inputs=("a", "b"),
    outputs=("c",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    notes=(
        "STAGE [M][N] holds this rank's partial, RECV [world][M/n][N] the peers' partials of its rows.",
        "The owner sums in fp32 (own partial unrounded) and rounds once; multimem and host_nccl sum "
        "dtype-rounded partials.",
    ),
    excluded=excluded,
)
register_pattern(PATTERN)
