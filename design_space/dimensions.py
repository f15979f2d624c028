"""The dimensions of the design space: each value typed and documented with what it means on
the hardware. Validity rules that tie dimensions together live in ``rules.py``."""

from __future__ import annotations

from enum import Enum


class Backend(str, Enum):
    LSA = "lsa"
    GIN = "gin"
    MULTIMEM = "multimem"
    COPY_ENGINE = "copy_engine"
    HOST_NCCL = "host_nccl"


class Placement(str, Enum):
    SEQUENTIAL = "sequential"
    STREAM_OVERLAP = "stream_overlap"
    SPLIT_PUT_WAIT = "split_put_wait"
    FUSED_PERSISTENT = "fused_persistent"


class SyncScope(str, Enum):
    GLOBAL_BARRIER = "global_barrier"
    PER_PEER_SIGNAL = "per_peer_signal"
    PER_TILE_SIGNAL = "per_tile_signal"


class Issuer(str, Enum):
    THREAD = "thread"
    WARP = "warp"
    CTA = "cta"
    COPY_ENGINE = "copy_engine"


# Transfer granularity in bytes: powers of two from 4 KiB (below this, per-chunk signalling
# costs more than the bytes it moves) to 4 MiB (above this, a shard of a decode-sized GEMM is
# one chunk and nothing pipelines).
CHUNK_BYTES: tuple[int, ...] = tuple(1 << e for e in range(12, 23, 2))
# SMs given to communication. Every SM taken stretches compute by N_SM / (N_SM - s); at most a
# quarter of the SMs (rules.py). copy_engine and host_nccl use none of ours and take 1.
COMM_CTAS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)

DIMENSION_DOCS: dict[str, dict[str, str]] = {
    "backend": {
        "lsa": "Peer loads/stores through load/store-accessible (LSA) peer pointers over NVLink or PCIe "
        "P2P; SMs move the bytes; every rank in one node.",
        "gin": "GPU-initiated one-sided put with remote signal (NCCL GIN); the NIC moves the bytes, so "
        "it works across nodes (inside a node it runs at NIC, not NVLink, bandwidth); one thread "
        "issues each put.",
        "multimem": "NVLink SHARP: in-switch reduce/broadcast through multicast addresses (an "
        "AllReduce moves ~(n+1)/n S instead of 2(n-1)/n S); Hopper+ with NVSwitch, one node; "
        "SMs issue the switch operations.",
        "copy_engine": "Peer memcpy driven by the DMA copy engines, enqueued from the host per chunk; "
        "uses no SMs (comm_ctas 1), below SM-push bandwidth on NVLink; one node.",
        "host_nccl": "Host-driven baseline: cuBLAS/kernel then an NCCL collective launched "
        "from the host (NCCL's own kernels, comm_ctas 1); works across nodes.",
    },
    "placement": {
        "sequential": "Compute after communication (or the reverse); no overlap.",
        "stream_overlap": "Chunked pipeline: communication and compute kernels on two streams, "
        "chunk i's compute overlaps chunk i+1's transfer.",
        "split_put_wait": "Puts issued early on a side stream, the dependent compute waits as "
        "late as possible on device signals.",
        "fused_persistent": "One persistent kernel: communication CTAs beside compute CTAs, "
        "tile-level signals between them.",
    },
    "sync_scope": {
        "global_barrier": "All ranks meet in a barrier after the whole transfer.",
        "per_peer_signal": "Each peer signals when its whole contribution has landed.",
        "per_tile_signal": "Each chunk/tile carries its own signal; consumers start per tile.",
    },
    "issuer": {
        "thread": "Each thread issues its own chunk transfer and signal.",
        "warp": "A warp cooperatively moves a chunk; lane 0 signals.",
        "cta": "A whole CTA cooperatively moves a chunk; one thread signals.",
        "copy_engine": "The DMA engine issues the transfer (cudaMemcpyAsync between peers).",
    },
    "chunk_bytes": {str(c): f"{c // 1024} KiB per transfer chunk" for c in CHUNK_BYTES},
    "comm_ctas": {str(c): f"{c} CTA(s) (one per SM) move data (lsa, multimem) or post puts (gin); "
                  "copy_engine and host_nccl take 1" for c in COMM_CTAS},
}
