"""The reduce-scatter + (residual add) + RMSNorm pattern: the sequence-parallel norm after a
row-parallel layer (Megatron-LM sequence parallelism; TokenWeave's fused communication + norm), with
no GEMM of its own. Its definition and cost model; its kernel templates live in
kernels/reducescatter_rmsnorm."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType

B, P, S = Backend, Placement, SyncScope
FLAGS = ("rmsnorm", "residual")  # 1: on, 2: off


def _on(dims: Mapping[str, int], flag: str) -> int:
    return 1 if dims[flag] == 1 else 0


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank, for its M/n rows of N: world-1 adds per element to sum the partials, one for the
    residual, four for RMSNorm (square, accumulate, times 1/rms, times gamma) plus three per row
    (mean, + eps, rsqrt): elementwise FLOPs, no GEMM. HBM: the partial P read once (every design
    reads it once, whoever moves it), the residual rows and gamma when used, y written once. The
    collective is a reduce-scatter of P, S = M*N*itemsize (docs/model.md). Every output row needs
    every rank's partial, so no compute is final before communication (local_fraction 0)."""
    m, n = dims["m"], dims["n"]
    rows, e = m // world, dtype.itemsize
    res, norm = _on(dims, "residual"), _on(dims, "rmsnorm")
    return WorkloadCost(
        flops=float(rows * n * (world - 1 + res + 4 * norm) + 3 * rows * norm),
        hbm_bytes=float((m * n + res * rows * n + norm * n + rows * n) * e),
        collective="reducescatter",
        comm_bytes=float(m * n * e),
        out_rows=rows,
        out_cols=n,
        local_fraction=0.0,
        entry_handshake=True,  # a push (multimem: STAGE's rewrite) waits for the peers to enter the call
    )


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("m", "n", *FLAGS) if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing} (rmsnorm, residual: 1 applies it, 2 does not)"]
    problems = [f"{f}={dims[f]} must be 1 (apply) or 2 (skip)" for f in FLAGS if dims[f] not in (1, 2)]
    if dims["m"] % world:
        problems.append(f"m={dims['m']} is not divisible by world size {world}: rank r keeps rows "
                        f"[r*M/n, (r+1)*M/n)")
    return problems


def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """STAGE [M][N] (this rank's partial, where a put, the switch or the library must read it) +
    RECV [world][M/n][N] (the peers' partials of this rank's rows)."""
    return 2 * dims["m"] * dims["n"] * dtype.itemsize


def excluded(point: DesignPoint) -> Optional[str]:
    if point.placement is P.SPLIT_PUT_WAIT and point.sync_scope is S.GLOBAL_BARRIER:
        return ("nothing runs between an early put and a late barrier (the owner's sum needs every rank's rows, "
                "and there is no GEMM to overlap): that design is the sequential one with a second stream")
    if point.sync_scope is S.PER_PEER_SIGNAL and (point.placement is not P.STREAM_OVERLAP
                                                  or point.backend is B.GIN):
        return ("one counter per peer tells the owner which of the peer's chunks landed only when they land in "
                "order, one pipeline step at a time on one stream (stream_overlap with lsa, multimem or "
                "copy_engine; GIN puts land in any order); otherwise the owner could sum no row before a peer's "
                "last chunk, so nothing overlaps: use per_tile_signal")
    return None


SUPPORTED: dict[str, tuple] = every_value()

PATTERN = Pattern(
    name="reducescatter_rmsnorm",
    description="Reduce-scatter + residual + RMSNorm (sequence parallelism after a row-parallel layer): "
                "h_r = (sum_j P_j)[rows of rank r] (+ R_r), y_r = RMSNorm(h_r) * gamma (eps 1e-6) when "
                "rmsnorm == 1, else h_r; P_j [M, N] un-reduced partials, R_r [M/n, N].",
    dims=("m", "n", "rmsnorm", "residual"),
    inputs=("p", "gamma", "residual"),
    outputs=("y",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    notes=(
        "Rank r owns rows [r*M/n, (r+1)*M/n); a chunk is whole rows of one row block (a row's norm needs all N "
        "columns); eps is fixed at 1e-6 (the templates' RMS_EPS, the reference's EPS).",
        "lsa and copy_engine push P's rows straight from the input into the owner's RECV; gin, multimem and "
        "host_nccl first copy P into STAGE (a put's source, the switch's and the library's operand is symmetric).",
        "The owner sums the ranks in rank order in fp32 (lsa, gin, copy_engine), adds the residual, rounds h once "
        "and normalises it; multimem and host_nccl sum in the switch or the library.",
    ),
    excluded=excluded,
    varied_dims=("m", "n"),
)
register_pattern(PATTERN)
