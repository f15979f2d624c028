"""The GEMM + all-reduce (+ fused RMSNorm) pattern: row-parallel GEMM whose partial products are
summed over ranks, optionally normalised per row (the TokenWeave pattern). Its definition and cost
model; its kernel templates live in kernels/gemm_allreduce."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank: the partial GEMM over K/n, reading A_r and B_r and writing the partial and Y.
    The all-reduce moves S = M*N*itemsize (docs/model.md: 2(n-1)/n * S/B); every output row
    needs every rank's partial, so no compute is final before communication (local_fraction 0:
    the pipeline's exposed part is the first chunk's compute / the last chunk's transfer)."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    kl, e = k // world, dtype.itemsize
    return WorkloadCost(
        flops=2.0 * m * n * kl,
        hbm_bytes=float((m * kl + kl * n + 2 * m * n) * e),
        collective="allreduce",
        comm_bytes=float(m * n * e),
        out_rows=m,
        out_cols=n,
        local_fraction=0.0,
    )

EPILOGUES = "rmsnorm: 1 applies RMSNorm(Y) * gamma, 2 outputs Y, 3 outputs Y + gamma (gamma as the bias)"


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("m", "n", "k", "rmsnorm") if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing} ({EPILOGUES})"]
    out = [f"k={dims['k']} is not divisible by world size {world}"] if dims["k"] % world else []
    if dims["rmsnorm"] not in (1, 2, 3):
        out.append(f"rmsnorm={dims['rmsnorm']} must be 1, 2 or 3 ({EPILOGUES})")
    return out

def _rows_per_owner(dims: Mapping[str, int], world: int) -> int:
    return -(-dims["m"] // world)

def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """PART [M, N] + STAGE [world * R, N] + RES [M, N], R = ceil(M / world)."""
    return (2 * dims["m"] + world * _rows_per_owner(dims, world)) * dims["n"] * dtype.itemsize

def excluded(point: DesignPoint) -> Optional[str]:
    if point.backend is Backend.MULTIMEM and point.placement is not Placement.SEQUENTIAL and (
            point.sync_scope is not SyncScope.PER_TILE_SIGNAL):
        return ("multimem moves no bytes before the owner's in-switch reduction, so waiting for whole "
                "partials (per_peer_signal) or a barrier after them leaves nothing to overlap: it is the "
                "sequential design with extra launches; use per_tile_signal, or sequential placement")
    return None

SUPPORTED: dict[str, tuple] = every_value()

PATTERN = Pattern(
    name="gemm_allreduce",
    description="Row-parallel GEMM + all-reduce (+ fused RMSNorm): Y = sum_j A_j @ B_j on every rank, "
                "A sharded by columns (K), B by rows; RMSNorm(Y) * gamma when rmsnorm == 1, Y + gamma (the "
                "layer's bias, added once after the sum) when rmsnorm == 3.",
    dims=("m", "n", "k", "rmsnorm"),
    inputs=("a", "b", "gamma"),
    outputs=("y",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    notes=(
        "lsa renders two-shot (push reduce-scatter + push all-gather) for global_barrier and per_peer_signal, "
        "and one-shot pull-and-sum for per_tile_signal",
        "gin and copy_engine render two-shot; multimem reduces in the switch and broadcasts with st",
        "the owner of a row block applies RMSNorm (or adds the bias) before the all-gather; host_nccl does "
        "after it",
        "the partial GEMM runs on the tensor-core tile, never across chunks: 16 x 256 tiles for chunks of at most "
        "16 rows, 128 x 128 for taller ones",
    ),
    excluded=excluded,
    varied_dims=("m", "n", "k"),
)
register_pattern(PATTERN)
