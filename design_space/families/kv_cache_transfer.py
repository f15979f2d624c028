"""The KV-cache transfer pattern (disaggregated serving): prefill ranks compute the KV cache layer
by layer and stream it to their decode partners. Its definition and cost model; its kernel
templates live in kernels/kv_cache_transfer."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Issuer
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType


MAX_CHUNKS = 1024  # the templates' MAX_CHUNKS: chunks never span layers, so L <= MAX_CHUNKS

THREADS = 256  # the templates' THREADS per CTA

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
    notes=(
        "World n is even: ranks [0, n/2) prefill, rank p's partner is decode rank p + n/2; decode ranks get dummy "
        "inputs of the same shapes.",
        "A chunk is CHUNK_BYTES of KV rows of one layer (never two layers), at most 1024 chunks per call.",
        "GIN and host_nccl stage the KV in the symmetric buffer (their source must live there); lsa and the copy "
        "engine send straight from out[0].",
        "The projection GEMM runs on the tensor-core tile, never across chunks: 32 x 256 tiles for chunks of at most "
        "32 rows, 128 x 128 for taller ones.",
    ),
    excluded=excluded,
    varied_dims=("t", "h", "dkv"),
)
register_pattern(PATTERN)
