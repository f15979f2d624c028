"""The KV-cache transfer pattern (disaggregated serving): prefill ranks compute the KV cache layer
by layer and stream it to their decode partners. Definition, cost model and template renderer."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern, require_renderable
from design_space.point import DesignPoint
from design_space.spec import DType
from design_space.templates import kv_cache_transfer_cuda as cu
from design_space.templates import kv_cache_transfer_cuda_host as host
from design_space.templates import kv_cache_transfer_cuda_send as send

MAX_CHUNKS = 1024  # the templates' MAX_CHUNKS: chunks never span layers, so L <= MAX_CHUNKS
THREADS = 256  # the templates' THREADS per CTA

_PUSH = {
    (Backend.LSA, Issuer.CTA): send.PUSH_LSA_CTA,
    (Backend.LSA, Issuer.WARP): send.PUSH_LSA_WARP,
    (Backend.LSA, Issuer.THREAD): send.PUSH_LSA_THREAD,
    (Backend.GIN, Issuer.CTA): send.PUSH_GIN_CTA,
    (Backend.GIN, Issuer.WARP): send.PUSH_GIN_WARP,
    (Backend.GIN, Issuer.THREAD): send.PUSH_GIN_THREAD,
}
_LSA_SIGNAL = {
    SyncScope.GLOBAL_BARRIER: send.LANDED_SIGNAL_NONE,
    SyncScope.PER_PEER_SIGNAL: send.LANDED_SIGNAL_PEER,
    SyncScope.PER_TILE_SIGNAL: send.LANDED_SIGNAL_TILE,
}
_LANDED = {
    SyncScope.GLOBAL_BARRIER: cu.LANDED_NONE,
    SyncScope.PER_PEER_SIGNAL: cu.LANDED_PEER,
    SyncScope.PER_TILE_SIGNAL: cu.LANDED_TILE,
}
# Placements whose sender runs beside the compute and so waits for each chunk's tiles.
_CONCURRENT = (Placement.SPLIT_PUT_WAIT, Placement.FUSED_PERSISTENT)


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank, for a prefill rank (the busiest: decode ranks only receive)."""
    layers, t, h, d = dims["l"], dims["t"], dims["h"], 2 * dims["dkv"]
    e = dtype.itemsize
    return WorkloadCost(
        flops=2.0 * layers * t * h * d,
        hbm_bytes=float((layers * t * h + layers * h * d + layers * t * d) * e),
        collective="p2p",
        comm_bytes=float(layers * t * d * e),  # S: the whole KV cache one prefill rank sends
        out_rows=layers * t,
        out_cols=d,
        # The transfer depends on the compute (the reverse of all-gather + GEMM): no compute
        # runs free of the pipeline, so the model's pipelined term is its fill and drain.
        local_fraction=0.0,
        pipeline_stages=layers,  # stream_overlap launches one GEMM and one send per layer
    )


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("l", "t", "h", "dkv") if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    problems = []
    if world < 2 or world % 2:
        problems.append(f"world size {world} must be even: ranks [0, n/2) prefill, [n/2, n) decode")
    if dims["l"] > MAX_CHUNKS:
        problems.append(f"l={dims['l']} layers exceed {MAX_CHUNKS}: a chunk never spans layers and each needs a slot")
    return problems


def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    return dims["l"] * dims["t"] * 2 * dims["dkv"] * dtype.itemsize  # the KV cache, sent or received


def excluded(point: DesignPoint) -> Optional[str]:
    """Thread issuers send whole chunks and a call has at most MAX_CHUNKS of them, so CTAs past
    MAX_CHUNKS / THREADS would only idle (and, in a persistent kernel, take SMs from the GEMM)."""
    busy = MAX_CHUNKS // THREADS
    if point.issuer is Issuer.THREAD and point.comm_ctas > busy:
        return (f"with issuer thread every thread sends whole chunks and a call has at most {MAX_CHUNKS} chunks: "
                f"comm CTAs beyond {busy} (of {THREADS} threads) never send anything; use comm_ctas <= {busy}")
    return None


def _wait(point: DesignPoint) -> str:
    return "cuco_gin_wait" if point.backend is Backend.GIN else "cuco_wait"


def _device_sender(point: DesignPoint) -> list[str]:
    """lsa / gin: comm CTAs store or post chunks."""
    gin = point.backend is Backend.GIN
    parts = [send.READY_WAIT if point.placement in _CONCURRENT else send.READY_NONE]
    if gin:
        tile = point.sync_scope is SyncScope.PER_TILE_SIGNAL
        parts += [send.GIN_SLOT_TILE if tile else send.GIN_SLOT_PEER, send.GIN_COMMON]
    else:
        parts.append(_LSA_SIGNAL[point.sync_scope])
    parts.append(_PUSH[(point.backend, point.issuer)])
    return parts


def _device_host(point: DesignPoint) -> list[str]:
    if point.placement is Placement.FUSED_PERSISTENT:
        return [send.KERNEL_FUSED, host.HOST_FUSED]
    parts = [send.KERNEL_COMM]
    if point.placement is Placement.SEQUENTIAL:
        text = (host.HOST_SEQUENTIAL.replace("@SEND@", host.SEND_DEVICE_ALL)
                .replace("@RECEIVE@", host.RECEIVE_AFTER_BARRIER_SEQUENTIAL))
        return parts + [text]
    barrier = point.sync_scope is SyncScope.GLOBAL_BARRIER
    text = (host.HOST_TWO_STREAMS
            .replace("@SEND@", host.SEND_DEVICE_PER_LAYER if point.placement is Placement.STREAM_OVERLAP
                     else host.SEND_DEVICE_EARLY)
            .replace("@AFTER_SEND@\n", host.BARRIER_ON_SIDE + "\n" if barrier else "")
            .replace("@RECEIVE@", host.RECEIVE_AFTER_BARRIER if barrier else host.RECEIVE_WAITING))
    return parts + [host.SIDE_STREAM, text]


def _device_backend(point: DesignPoint) -> list[str]:
    gin = point.backend is Backend.GIN
    fused = point.placement is Placement.FUSED_PERSISTENT
    parts = [cu.STORE_OUT_AND_SYMM if gin else cu.STORE_OUT,
             cu.TILE_DONE_SIGNAL if point.placement in _CONCURRENT else cu.TILE_DONE_NONE,
             cu.GEMM]
    if not fused:
        parts.append(cu.KERNEL_GEMM)
    barrier = point.sync_scope is SyncScope.GLOBAL_BARRIER
    parts += [cu.CREDIT_GIN if gin else cu.CREDIT_LSA, _LANDED[point.sync_scope].replace("@WAIT@", _wait(point)),
              cu.RECEIVE.replace("@CREDIT@", "" if barrier else cu.CREDIT_IN_RECEIVE)]
    if not fused:
        parts.append(cu.KERNEL_RECEIVE)
    if barrier:
        parts.append(cu.BARRIER_GIN if gin else cu.BARRIER_LSA)
    return parts + _device_sender(point) + _device_host(point)


def _copy_engine(point: DesignPoint) -> list[str]:
    scope, placement = point.sync_scope, point.placement
    before = host.CE_BEFORE_WAIT_READY if placement is Placement.SPLIT_PUT_WAIT else ""
    after = host.CE_AFTER_SIGNAL_CHUNK if scope is SyncScope.PER_TILE_SIGNAL else ""
    body = {SyncScope.GLOBAL_BARRIER: host.CE_RECEIVE_AFTER_BARRIER, SyncScope.PER_PEER_SIGNAL: host.CE_RECEIVE_PEER,
            SyncScope.PER_TILE_SIGNAL: host.CE_RECEIVE_TILE}[scope]
    parts = [cu.STORE_OUT, cu.TILE_DONE_SIGNAL if placement is Placement.SPLIT_PUT_WAIT else cu.TILE_DONE_NONE,
             cu.GEMM, cu.KERNEL_GEMM]
    if scope is SyncScope.GLOBAL_BARRIER:
        parts.append(cu.BARRIER_PLAIN)
    parts += [host.CE_SEND.replace("@BEFORE@\n", before + "\n" if before else "")
              .replace("@AFTER@\n", after + "\n" if after else ""),
              host.CE_RECEIVE.replace("@BODY@", body)]
    if placement is Placement.SEQUENTIAL:
        return parts + [host.HOST_SEQUENTIAL.replace("@SEND@", host.SEND_CE_ALL)
                        .replace("@RECEIVE@", host.RECEIVE_CE_SEQUENTIAL)]
    after_send = {SyncScope.GLOBAL_BARRIER: host.BARRIER_ON_SIDE, SyncScope.PER_PEER_SIGNAL: host.CE_AFTER_SEND_PEER,
                  SyncScope.PER_TILE_SIGNAL: ""}[scope]
    text = (host.HOST_TWO_STREAMS
            .replace("@SEND@", host.SEND_CE_PER_LAYER if placement is Placement.STREAM_OVERLAP else host.SEND_CE_EARLY)
            .replace("@AFTER_SEND@\n", after_send + "\n" if after_send else "")
            .replace("@RECEIVE@", host.RECEIVE_CE))
    return parts + [host.SIDE_STREAM, text]


def _host_nccl(point: DesignPoint) -> list[str]:
    # NCCL send/recv is a rendezvous: no credit, no signals
    parts = [cu.STORE_OUT_AND_SYMM, cu.TILE_DONE_NONE, cu.GEMM, cu.KERNEL_GEMM, cu.LANDED_NONE,
             cu.RECEIVE.replace("@CREDIT@", ""), cu.KERNEL_RECEIVE]
    if point.placement is Placement.SEQUENTIAL:
        return parts + [host.HOST_SEQUENTIAL.replace("@SEND@", host.SEND_NCCL_ALL)
                        .replace("@RECEIVE@", host.RECEIVE_NCCL_SEQUENTIAL)]
    text = (host.HOST_TWO_STREAMS.replace("@SEND@", host.SEND_NCCL_PER_LAYER).replace("@AFTER_SEND@\n", "")
            .replace("@RECEIVE@", host.RECEIVE_NCCL_CHUNKS))
    return parts + [host.SIDE_STREAM, text]


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values must be in ``SUPPORTED`` and it must not be excluded)."""
    require_renderable("kv_cache_transfer", SUPPORTED, excluded, point)
    if point.backend is Backend.COPY_ENGINE:
        body = _copy_engine(point)
    elif point.backend is Backend.HOST_NCCL:
        body = _host_nccl(point)
    else:
        body = _device_backend(point)
    constants = cu.CONSTANTS.replace("@CHUNK_BYTES@", str(point.chunk_bytes)).replace("@COMM_CTAS@",
                                                                                     str(point.comm_ctas))
    return "".join([cu.HEADER.replace("@POINT@", point.key()), constants, *body])


SUPPORTED: dict[str, tuple] = every_value(without_backends=(Backend.MULTIMEM,))  # nothing to reduce or broadcast

PATTERN = Pattern(
    name="kv_cache_transfer",
    description="Disaggregated-serving KV-cache transfer: prefill rank p computes KV_l = X_l @ W_l layer by layer "
                "and streams it to decode rank p + n/2, which outputs the cache it received.",
    dims=("l", "t", "h", "dkv"),
    inputs=("x", "w"),
    outputs=("kv",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    render=render,
    notes=(
        "World n is even: ranks [0, n/2) prefill, rank p's partner is decode rank p + n/2; decode ranks get dummy "
        "inputs of the same shapes.",
        "A chunk is CHUNK_BYTES of KV rows of one layer (never two layers), at most 1024 chunks per call.",
        "GIN and host_nccl stage the KV in the symmetric buffer (their source must live there); lsa and the copy "
        "engine send straight from out[0].",
    ),
    excluded=excluded,
)
register_pattern(PATTERN)
