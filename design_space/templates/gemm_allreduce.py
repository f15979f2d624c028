"""The GEMM + all-reduce (+ fused RMSNorm) pattern: row-parallel GEMM whose partial products are
summed over ranks, optionally normalised per row (the TokenWeave pattern). Its definition, cost
model and template renderer; the CUDA text is in ``gemm_allreduce_cuda*.py``."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern, require_renderable
from design_space.point import DesignPoint
from design_space.spec import DType
from design_space.templates import gemm_allreduce_cuda as cu
from design_space.templates import gemm_allreduce_cuda_comm as cm
from design_space.templates import gemm_allreduce_cuda_host as ho

_GROUP = {Issuer.CTA: cu.GROUP_CTA, Issuer.WARP: cu.GROUP_WARP, Issuer.THREAD: cu.GROUP_THREAD,
          Issuer.COPY_ENGINE: cu.GROUP_CTA}  # the copy engines' reduce kernel sums with whole CTAs
_SCOPE = {SyncScope.PER_TILE_SIGNAL: cu.SCOPE_PER_TILE, SyncScope.PER_PEER_SIGNAL: cu.SCOPE_PER_PEER,
          SyncScope.GLOBAL_BARRIER: cu.SCOPE_GLOBAL}
_BARRIER_KERNEL = "\n__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) { cuco_barrier(c, 0); }\n"


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank: the partial GEMM over K/n, reading A_r and B_r and writing the partial and Y.
    The all-reduce moves S = M*N*itemsize (REFERENCE s.3: 2(n-1)/n * S/B); every output row
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


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("m", "n", "k", "rmsnorm") if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing} (rmsnorm: 1 applies RMSNorm, 2 does not)"]
    return [f"k={dims['k']} is not divisible by world size {world}"] if dims["k"] % world else []


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


def _backend(point: DesignPoint) -> tuple[str, str]:
    """(prims, ops) CUDA pieces of the point's backend and algorithm."""
    put = f"cuco_put_{point.issuer.value}"
    if point.backend is Backend.LSA and point.sync_scope is SyncScope.PER_TILE_SIGNAL:
        return cm.LSA1_PRIMS, cm.LSA1_OPS + cm.ROW_GENERIC  # one-shot pull-and-sum, chunk by chunk
    if point.backend is Backend.LSA:
        return cm.LSA2_PRIMS, cm.PUSH_SUM + cm.ROW_GENERIC + cm.LSA2_OPS.replace("@PUT@", put)
    if point.backend is Backend.GIN:
        return cm.GIN_PRIMS, cm.PUSH_SUM + cm.ROW_GENERIC + cm.GIN_OPS
    if point.backend is Backend.MULTIMEM:
        return cm.MM_PRIMS, cm.MM_OPS
    return cm.CE_PRIMS, cm.PUSH_SUM + cm.ROW_GENERIC + cm.CE_OPS


def _phases(template: str, stream: str) -> str:
    return template.replace("@S@", stream)


def _device_host(point: DesignPoint) -> str:
    """cuco_run of the device-driven backends (lsa, gin, multimem)."""
    scope, pl = point.sync_scope, point.placement
    if pl is Placement.FUSED_PERSISTENT:
        return ho.RUN_OPEN + ho.DEV_FUSED + ho.CLOSE
    if pl is Placement.SEQUENTIAL:
        return ho.RUN_OPEN + ho.DEV_SEQUENTIAL.replace("@PHASES@", _phases(ho.PHASES_GLOBAL, "stream")) + ho.CLOSE
    if pl is Placement.STREAM_OVERLAP:
        per_stage, after = {
            SyncScope.PER_TILE_SIGNAL: (ho.SO_PER_TILE, ""),
            SyncScope.PER_PEER_SIGNAL: (ho.SO_PUBLISH, ho.SO_AFTER_PER_PEER),
            SyncScope.GLOBAL_BARRIER: (ho.SO_PUBLISH, _phases(ho.PHASES_GLOBAL, "g_side")),
        }[scope]
        body = ho.DEV_STREAM_OVERLAP.replace("@PER_STAGE@", per_stage).replace("@AFTER@", after)
    else:
        comm = (ho.SPLIT_GLOBAL.replace("@PHASES@", _phases(ho.PHASES_GLOBAL, "g_side").rstrip("\n"))
                if scope is SyncScope.GLOBAL_BARRIER else ho.SPLIT_SIGNALS)
        body = ho.DEV_SPLIT.replace("@COMM@", comm)
    return ho.SIDE_STREAM + ho.RUN_OPEN + ho.FORK + body + ho.JOIN_CLOSE


def _copy_engine_host(point: DesignPoint) -> str:
    scope, pl = point.sync_scope, point.placement
    if pl is Placement.SEQUENTIAL:
        return (ho.CE_HELPERS + ho.RUN_OPEN + ho.CE_SEQUENTIAL.replace("@PHASES@", _phases(ho.CE_PHASES_GLOBAL, "stream"))
                + ho.CLOSE)
    if pl is Placement.STREAM_OVERLAP:
        per_stage, after = {
            SyncScope.PER_TILE_SIGNAL: (ho.CE_SO_PER_TILE, ""),
            SyncScope.PER_PEER_SIGNAL: ("", ho.CE_AFTER_PER_PEER),
            SyncScope.GLOBAL_BARRIER: ("", _phases(ho.CE_PHASES_GLOBAL, "g_side")),
        }[scope]
        body = ho.CE_STREAM_OVERLAP.replace("@PER_STAGE@\n", per_stage + "\n" if per_stage else "")
        body = body.replace("@AFTER@", after)
    else:
        body = ho.CE_SPLIT.replace(
            "@REST@", ho.CE_SPLIT_GLOBAL if scope is SyncScope.GLOBAL_BARRIER else ho.CE_SPLIT_SIGNALS)
    return ho.CE_HELPERS + ho.SIDE_STREAM + ho.RUN_OPEN + ho.FORK + body + ho.JOIN_CLOSE


def _host_nccl(point: DesignPoint) -> str:
    # The GEMM neither waits nor signals: NCCL's collective after it does all the synchronising.
    prims = ("\nstatic __device__ __forceinline__ void before_tile(const cuco_ctx&, const Problem&, int64_t) {}\n"
             "static __device__ __forceinline__ void tile_done(const cuco_ctx&, int64_t) {}\n")
    if point.placement is Placement.SEQUENTIAL:
        host = ho.RUN_OPEN + ho.NCCL_SEQUENTIAL + ho.CLOSE
    else:
        host = ho.SIDE_STREAM + ho.RUN_OPEN + ho.FORK + ho.NCCL_STREAM_OVERLAP + ho.JOIN_CLOSE
    return "".join([cu.GROUP_CTA, cu.GROUP_COMMON, prims, cu.GEMM, ho.NCCL_KERNELS, host])


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (which must be in ``SUPPORTED`` and not excluded)."""
    require_renderable("gemm_allreduce", SUPPORTED, excluded, point)
    head = (cu.HEADER.replace("@POINT@", point.key())
            + cu.CONSTANTS.replace("@CHUNK_BYTES@", str(point.chunk_bytes)).replace("@COMM_CTAS@", str(point.comm_ctas)))
    if point.backend is Backend.HOST_NCCL:
        return head + _host_nccl(point)
    prims, ops = _backend(point)
    fused = point.placement is Placement.FUSED_PERSISTENT
    kernels = cm.KERNEL_FUSED if fused else cm.KERNELS_SPLIT
    if point.sync_scope is SyncScope.GLOBAL_BARRIER:
        kernels += _BARRIER_KERNEL
    host = _copy_engine_host(point) if point.backend is Backend.COPY_ENGINE else _device_host(point)
    return head + "".join([_GROUP[point.issuer], cu.GROUP_COMMON, prims, _SCOPE[point.sync_scope], cu.TILE_SIGNAL, cu.GEMM,
                           ops,
                           cm.COMM_WORK, kernels, host])


SUPPORTED: dict[str, tuple] = every_value()

PATTERN = Pattern(
    name="gemm_allreduce",
    description="Row-parallel GEMM + all-reduce (+ fused RMSNorm): Y = sum_j A_j @ B_j on every rank, "
                "A sharded by columns (K), B by rows; RMSNorm(Y) * gamma when rmsnorm == 1.",
    dims=("m", "n", "k", "rmsnorm"),
    inputs=("a", "b", "gamma"),
    outputs=("y",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    render=render,
    notes=(
        "lsa renders two-shot (push reduce-scatter + push all-gather) for global_barrier and per_peer_signal, "
        "and one-shot pull-and-sum for per_tile_signal",
        "gin and copy_engine render two-shot; multimem reduces in the switch and broadcasts with st",
        "the owner of a row block applies RMSNorm before the all-gather; host_nccl normalises after it",
    ),
    excluded=excluded,
)
register_pattern(PATTERN)
