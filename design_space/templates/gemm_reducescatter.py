"""The GEMM + reduce-scatter pattern (row-parallel GEMM, FLUX's GEMM+RS): its definition, cost
model and template renderer. CUDA pieces live in gemm_reducescatter_cuda*.py."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern, require_renderable
from design_space.point import DesignPoint
from design_space.spec import DType
from design_space.templates import gemm_reducescatter_cuda as cu
from design_space.templates import gemm_reducescatter_cuda_comm as cm
from design_space.templates import gemm_reducescatter_cuda_host as ho

B, P, S = Backend, Placement, SyncScope

_PUSH = {
    (B.LSA, Issuer.CTA): cm.PUSH_LSA_CTA, (B.LSA, Issuer.WARP): cm.PUSH_LSA_WARP,
    (B.LSA, Issuer.THREAD): cm.PUSH_LSA_THREAD, (B.GIN, Issuer.CTA): cm.PUSH_GIN_CTA,
    (B.GIN, Issuer.WARP): cm.PUSH_GIN_WARP, (B.GIN, Issuer.THREAD): cm.PUSH_GIN_THREAD,
}
_ARRIVAL = {
    (B.LSA, S.PER_TILE_SIGNAL): cm.ARRIVAL_LSA_PER_TILE, (B.LSA, S.PER_PEER_SIGNAL): cm.ARRIVAL_LSA_PER_PEER,
    (B.LSA, S.GLOBAL_BARRIER): cm.ARRIVAL_NONE, (B.GIN, S.PER_TILE_SIGNAL): cm.ARRIVAL_GIN_PER_TILE,
    (B.GIN, S.PER_PEER_SIGNAL): cm.ARRIVAL_GIN_PER_PEER, (B.GIN, S.GLOBAL_BARRIER): cm.ARRIVAL_GIN_GLOBAL,
}
_MM_TILE_DONE = {S.PER_TILE_SIGNAL: cm.TILE_DONE_OWNER_PER_TILE, S.PER_PEER_SIGNAL: cm.TILE_DONE_OWNER_PER_PEER,
                 S.GLOBAL_BARRIER: cm.TILE_DONE_OWNER_GLOBAL}
_MM_ISSUER = {Issuer.CTA: cm.MM_CTA, Issuer.WARP: cm.MM_WARP, Issuer.THREAD: cm.MM_THREAD}
_PUSH_OWN = {S.GLOBAL_BARRIER: ho.OWN_AFTER_BARRIER, S.PER_PEER_SIGNAL: ho.OWN_WAIT_IN_KERNEL}
_CE_SIGNAL = {S.GLOBAL_BARRIER: ho.CE_SIGNAL_NONE, S.PER_PEER_SIGNAL: ho.CE_SIGNAL_PER_PEER,
              S.PER_TILE_SIGNAL: ho.CE_SIGNAL_PER_TILE}
_CE_OWN = {S.GLOBAL_BARRIER: ho.CE_OWN_BARRIER, S.PER_PEER_SIGNAL: ho.CE_OWN_PER_PEER}


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank: the [M, K/n] x [K/n, N] partial GEMM (inputs read, partial written once) and a
    reduce-scatter of the full [M, N] partial (S = M*N*itemsize, REFERENCE s.3)."""
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


def _tile_done(point: DesignPoint) -> str:
    if point.backend is B.MULTIMEM:
        return _MM_TILE_DONE[point.sync_scope]
    if point.placement is P.FUSED_PERSISTENT:
        return cm.TILE_DONE_READY
    return cm.TILE_DONE_NONE


def _comm_device(point: DesignPoint) -> list[str]:
    """Device-side communication pieces and kernels, after the GEMM."""
    fused = point.placement is P.FUSED_PERSISTENT
    barrier = [] if point.sync_scope is not S.GLOBAL_BARRIER else [
        cm.BARRIER_GIN if point.backend is B.GIN else cm.BARRIER]
    if point.backend is B.MULTIMEM:
        kernel = cm.FUSED_MULTIMEM if fused else cu.LAUNCH_GEMM + cm.REDUCE_KERNEL
        return [cm.MM_REDUCE_CHUNK, _MM_ISSUER[point.issuer], *barrier, kernel]
    if point.backend is B.HOST_NCCL:
        return [cu.LAUNCH_GEMM]
    if point.backend is B.COPY_ENGINE:
        arrival = cm.ARRIVAL_CE_PER_TILE if point.sync_scope is S.PER_TILE_SIGNAL else cm.ARRIVAL_NONE
    else:
        arrival = _ARRIVAL[(point.backend, point.sync_scope)]
    parts = [arrival, cu.FINISH, *barrier]
    if point.backend is B.COPY_ENGINE:
        return parts + [cu.LAUNCH_GEMM, cu.LAUNCH_FINISH]
    parts += [cm.PUSH_ITEM, _PUSH[(point.backend, point.issuer)]]
    return parts + ([cm.FUSED_PUSH] if fused else [cm.PUSH_KERNEL, cu.LAUNCH_GEMM, cu.LAUNCH_FINISH])


def _own(point: DesignPoint) -> str:
    """How the owner sums once its peers' chunks are on their way (push and copy_engine)."""
    if point.sync_scope is S.PER_TILE_SIGNAL:  # in-kernel waits per chunk: one late kernel, or one per step
        return ho.OWN_PER_STEP if point.placement is P.STREAM_OVERLAP else ho.OWN_WAIT_IN_KERNEL
    return (_CE_OWN if point.backend is B.COPY_ENGINE else _PUSH_OWN)[point.sync_scope]


def _host(point: DesignPoint) -> str:
    b, pl, sc = point.backend, point.placement, point.sync_scope
    side = "" if pl in (P.SEQUENTIAL, P.FUSED_PERSISTENT) else cu.SIDE_STREAM
    if b is B.HOST_NCCL:
        return side + (ho.NCCL_SEQUENTIAL if pl is P.SEQUENTIAL else ho.NCCL_STREAM_OVERLAP)
    if b is B.MULTIMEM:
        host = {P.SEQUENTIAL: ho.MM_SEQUENTIAL, P.STREAM_OVERLAP: ho.MM_STREAM_OVERLAP, P.SPLIT_PUT_WAIT: ho.MM_SPLIT,
                P.FUSED_PERSISTENT: ho.MM_FUSED}[pl]
        return side + host.replace("@MM_STAGE@", ho.MM_STAGE_BARRIER if sc is S.GLOBAL_BARRIER else "")
    if b is B.COPY_ENGINE:
        host = {P.SEQUENTIAL: ho.CE_SEQUENTIAL, P.STREAM_OVERLAP: ho.CE_STREAM_OVERLAP,
                P.SPLIT_PUT_WAIT: ho.CE_SPLIT}[pl]
        put = ho.CE_PUT.replace("@CE_SIGNAL@", _CE_SIGNAL[sc])
        return side + put + host.replace("@OWN@", _own(point))
    host = {P.SEQUENTIAL: ho.PUSH_SEQUENTIAL, P.STREAM_OVERLAP: ho.PUSH_STREAM_OVERLAP, P.SPLIT_PUT_WAIT: ho.PUSH_SPLIT,
            P.FUSED_PERSISTENT: ho.PUSH_FUSED}[pl]
    return side + host.replace("@OWN@", _own(point))


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values in ``SUPPORTED``, not ``excluded``)."""
    require_renderable("gemm_reducescatter", SUPPORTED, excluded, point)
    chunk_major = point.backend is B.HOST_NCCL and point.placement is P.STREAM_OVERLAP
    parts = [
        cu.HEADER.replace("@POINT@", point.key()),
        cu.CONSTANTS.replace("@CHUNK_BYTES@", str(point.chunk_bytes)).replace("@COMM_CTAS@", str(point.comm_ctas)),
        cu.LAYOUT_CHUNK_MAJOR if chunk_major else cu.LAYOUT_BLOCK_MAJOR,
        cu.CHUNKS,
        cu.GEMM_TILE,
        _tile_done(point),
        cu.RUN_GEMM,
        *_comm_device(point),
        _host(point),
    ]
    return "".join(parts)


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
    render=render,
    notes=(
        "STAGE [M][N] holds this rank's partial, RECV [world][M/n][N] the peers' partials of its rows.",
        "The owner sums in fp32 (own partial unrounded) and rounds once; multimem and host_nccl sum "
        "dtype-rounded partials.",
    ),
    excluded=excluded,
)
register_pattern(PATTERN)
