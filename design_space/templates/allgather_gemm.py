"""The all-gather + GEMM pattern: its definition, cost model and template renderer."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import CHUNK_BYTES, Backend, Issuer, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern, require_renderable
from design_space.point import DesignPoint
from design_space.spec import DType
from design_space.templates import allgather_gemm_cuda as cu
from design_space.templates import allgather_gemm_cuda_comm as comm
from design_space.templates import allgather_gemm_cuda_host as host

_ISSUER = {Issuer.CTA: comm.ISSUER_CTA, Issuer.WARP: comm.ISSUER_WARP, Issuer.THREAD: comm.ISSUER_THREAD}
_PUT = {Issuer.CTA: comm.PUT_CTA, Issuer.WARP: comm.PUT_WARP, Issuer.THREAD: comm.PUT_THREAD}
_SIGNAL = {
    SyncScope.PER_TILE_SIGNAL: comm.SIGNAL_PER_TILE,
    SyncScope.PER_PEER_SIGNAL: comm.SIGNAL_PER_PEER,
    SyncScope.GLOBAL_BARRIER: comm.SIGNAL_GLOBAL,
}
_PUSH = {Backend.LSA: comm.PUSH_LSA, Backend.GIN: comm.PUSH_GIN, Backend.MULTIMEM: comm.PUSH_MULTIMEM,
         Backend.COPY_ENGINE: comm.PUSH_COPY_ENGINE}
# Signal slots per source rank: the pad has 32768 user slots, GIN 4096 signals (32 ranks each);
# host_nccl keeps one event per chunk.
_MAX_CHUNKS = {Backend.GIN: 128, Backend.HOST_NCCL: 64}


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
    if point.backend is Backend.HOST_NCCL:
        return host.HOST_NCCL_SEQUENTIAL if point.placement is Placement.SEQUENTIAL else host.HOST_NCCL_OVERLAP
    if point.placement is Placement.SEQUENTIAL:
        return host.HOST_SEQUENTIAL
    if point.placement is Placement.FUSED_PERSISTENT:
        return host.HOST_FUSED
    overlap = point.placement is Placement.STREAM_OVERLAP
    if point.sync_scope is SyncScope.GLOBAL_BARRIER:
        after, remote = host.AFTER_PUSH_BARRIER, host.REMOTE_AFTER_BARRIER
    elif not overlap:
        after, remote = "", host.REMOTE_WAIT_IN_KERNEL
    elif point.sync_scope is SyncScope.PER_PEER_SIGNAL:
        after, remote = "", host.REMOTE_PER_PEER
    else:
        after, remote = "", host.REMOTE_PER_CHUNK
    return (host.HOST_TWO_STREAMS
            .replace("@PRELUDE@\n", "  const int64_t nch = num_chunks(p);\n" if overlap else "")
            .replace("@PUSH@", host.PUSH_PER_CHUNK if overlap else host.PUSH_ALL_EARLY)
            .replace("@AFTER_PUSH@\n", after + "\n" if after else "")
            .replace("@OWN_ROWS@", "  // own rows need no transfer" if overlap else "")
            .replace("@REMOTE@", remote))


def _communication(point: DesignPoint) -> list[str]:
    """Signal slots and waits, issuer and transfer pieces for a device-initiated backend."""
    gin = point.backend is Backend.GIN
    signal = comm.SIGNAL_GLOBAL_GIN if gin and point.sync_scope is SyncScope.GLOBAL_BARRIER else _SIGNAL[point.sync_scope]
    issuer = "" if point.backend is Backend.COPY_ENGINE else _ISSUER[point.issuer]
    put = _PUT[point.issuer] if point.backend is Backend.LSA else ""
    return [comm.WAIT_GIN if gin else comm.WAIT_PAD, signal, issuer, put]


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (which must be in ``SUPPORTED`` and not excluded)."""
    require_renderable("allgather_gemm", SUPPORTED, excluded, point)
    host_driven = point.backend is Backend.HOST_NCCL
    chunked_rows = host_driven and point.placement is Placement.STREAM_OVERLAP
    constants = (cu.CONSTANTS.replace("@CHUNK_BYTES@", str(point.chunk_bytes))
                 .replace("@COMM_CTAS@", str(point.comm_ctas))
                 .replace("@MAX_CHUNKS@", str(_MAX_CHUNKS.get(point.backend, 1024))))
    parts = [cu.HEADER.replace("@POINT@", point.key()), constants,
             cu.A_ROW_CHUNKED if chunked_rows else cu.A_ROW_GATHERED]
    if host_driven:
        parts.append(comm.SIGNAL_GLOBAL.split("__global__")[0].replace("a cross-rank barrier follows",
                                                                       "the library collective synchronises"))
        parts += [cu.GEMM, cu.KERNELS_SPLIT, cu.SIDE_STREAM if chunked_rows else ""]
    else:
        fused = point.placement is Placement.FUSED_PERSISTENT
        parts += _communication(point) + [_PUSH[point.backend]]
        parts.append("" if fused or point.backend is Backend.COPY_ENGINE else comm.COMM_KERNEL)
        parts += [cu.GEMM, cu.KERNEL_FUSED if fused else cu.KERNELS_SPLIT]
        parts.append("" if point.placement in (Placement.SEQUENTIAL, Placement.FUSED_PERSISTENT) else cu.SIDE_STREAM)
    parts.append(_host(point))
    return "".join(parts)


def excluded(point: DesignPoint) -> Optional[str]:
    if (point.backend is Backend.HOST_NCCL and point.placement is Placement.SEQUENTIAL
            and point.chunk_bytes != CHUNK_BYTES[-1]):
        return "a sequential library all-gather moves the whole shard at once: chunk_bytes has no effect " \
               f"(the family keeps only {CHUNK_BYTES[-1] // 1024}K)"
    return None


SUPPORTED: dict[str, tuple] = every_value()

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
    excluded=excluded,
)
register_pattern(PATTERN)
