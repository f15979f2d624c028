"""The all-gather + GEMM pattern: its definition, cost model and template renderer."""

from __future__ import annotations

from typing import Mapping

from design_space.dimensions import CHUNK_BYTES, COMM_CTAS, Backend, Issuer, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType
from design_space.templates import allgather_gemm_cuda as cu

_PUSH = {Issuer.CTA: cu.PUSH_CTA, Issuer.WARP: cu.PUSH_WARP, Issuer.THREAD: cu.PUSH_THREAD}
_SIGNAL = {
    SyncScope.PER_TILE_SIGNAL: cu.SIGNAL_PER_TILE,
    SyncScope.PER_PEER_SIGNAL: cu.SIGNAL_PER_PEER,
    SyncScope.GLOBAL_BARRIER: cu.SIGNAL_GLOBAL,
}


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    m, n, k = dims["m"], dims["n"], dims["k"]
    nl = n // world
    e = dtype.itemsize
    return WorkloadCost(
        flops=2.0 * m * nl * k,
        hbm_bytes=float((m * k + k * nl + m * nl) * e),
        collective="allgather",
        comm_bytes=float(m * k * e),
        out_rows=m,
        out_cols=nl,
        local_fraction=1.0 / world,
    )


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("m", "n", "k") if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    return [f"{d}={dims[d]} is not divisible by world size {world}" for d in ("m", "n") if dims[d] % world]


def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    return dims["m"] * dims["k"] * dtype.itemsize  # the gathered A


def _host(point: DesignPoint) -> str:
    if point.placement is Placement.SEQUENTIAL:
        return cu.HOST_SEQUENTIAL
    if point.placement is Placement.FUSED_PERSISTENT:
        return cu.HOST_FUSED
    overlap = point.placement is Placement.STREAM_OVERLAP
    if point.sync_scope is SyncScope.GLOBAL_BARRIER:
        after, remote = cu.AFTER_PUSH_BARRIER, cu.REMOTE_AFTER_BARRIER
    elif not overlap:
        after, remote = "", cu.REMOTE_WAIT_IN_KERNEL
    elif point.sync_scope is SyncScope.PER_PEER_SIGNAL:
        after, remote = "", cu.REMOTE_PER_PEER
    else:
        after, remote = "", cu.REMOTE_PER_CHUNK
    host = (cu.HOST_TWO_STREAMS
            .replace("@PRELUDE@\n", "  const int64_t nch = num_chunks(p);\n" if overlap else "")
            .replace("@PUSH@", cu.PUSH_PER_CHUNK if overlap else cu.PUSH_ALL_EARLY)
            .replace("@AFTER_PUSH@\n", after + "\n" if after else "")
            .replace("@OWN_ROWS@", "  // own rows need no transfer" if overlap else "")
            .replace("@REMOTE@", remote))
    return cu.SIDE_STREAM + host


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (which must be in ``SUPPORTED``)."""
    for dim, values in SUPPORTED.items():
        if getattr(point, dim) not in values:
            raise ValueError(f"allgather_gemm templates do not render {dim}={getattr(point, dim)}")
    kernels = cu.KERNEL_FUSED if point.placement is Placement.FUSED_PERSISTENT else cu.KERNELS_SPLIT
    parts = [
        cu.HEADER.replace("@POINT@", point.key()),
        cu.CONSTANTS.replace("@CHUNK_BYTES@", str(point.chunk_bytes)).replace("@COMM_CTAS@", str(point.comm_ctas)),
        _SIGNAL[point.sync_scope],
        cu.PUSH_COMMON,
        _PUSH[point.issuer],
        cu.GEMM,
        kernels,
        _host(point),
    ]
    return "".join(parts)


SUPPORTED: dict[str, tuple] = {
    "backend": (Backend.LSA,),
    "placement": tuple(Placement),
    "sync_scope": tuple(SyncScope),
    "issuer": (Issuer.THREAD, Issuer.WARP, Issuer.CTA),
    "chunk_bytes": CHUNK_BYTES,
    "comm_ctas": COMM_CTAS,
}

PATTERN = Pattern(
    name="allgather_gemm",
    description="Tensor-parallel all-gather + GEMM: C_r = allgather(A) @ B_r, A sharded by rows, B by columns.",
    dims=("m", "n", "k"),
    inputs=("a", "b"),
    outputs=("c",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    render=render,
)
register_pattern(PATTERN)
