"""Kernel templates of the KV-cache transfer family: ``candidate.cu.j2`` and the pieces it includes
render a design point into one candidate source.

World n is even. Prefill rank p < n/2 holds X [L, T, H] (ctx.in[0]) and W [L, H, 2*Dkv]
(ctx.in[1]); it computes KV_l = X_l @ W_l into ctx.out[0] [L, T, 2*Dkv] with the tensor-core
GEMM tile and streams it to its decode partner p + n/2, which outputs the KV cache it received.
The KV cache has the same byte layout in both partners' outputs and symmetric buffers, so a chunk
keeps its offset end to end. A chunk is CHUNK_BYTES worth of KV rows of one layer (never two
layers); GEMM tiles are aligned to chunks, so a chunk is ready when its own tiles are.

Pieces: ``chunks`` (chunking, signal slots, the GEMM's tile shapes and order), ``gemm`` (where a
tile's KV goes, what a finished tile signals, the GEMM kernel), ``receive`` (the decode side:
credit, what it waits for, the copy out), ``send`` (the device-initiated senders per backend and
issuer), ``host_device`` / ``host_copy_engine`` / ``host_nccl`` (cuco_run per placement).
"""

from __future__ import annotations

from design_space.dimensions import Backend, Placement, SyncScope
from design_space.families.kv_cache_transfer import SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def _tiles_signal(point: DesignPoint) -> bool:
    """Whether the sender runs beside the compute and so waits for each chunk's tiles."""
    if point.backend is Backend.HOST_NCCL:
        return False
    if point.backend is Backend.COPY_ENGINE:
        return point.placement is Placement.SPLIT_PUT_WAIT
    return point.placement in (Placement.SPLIT_PUT_WAIT, Placement.FUSED_PERSISTENT)


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values must be in ``SUPPORTED`` and it must not be excluded)."""
    require_renderable("kv_cache_transfer", SUPPORTED, excluded, point)
    device = point.backend in (Backend.LSA, Backend.GIN)
    return render_point(
        "kv_cache_transfer", point,
        # GIN puts and NCCL send both take symmetric-buffer offsets: the KV is staged there too
        stage_in_symm=point.backend in (Backend.GIN, Backend.HOST_NCCL),
        tiles_signal=_tiles_signal(point),
        wait="cuco_gin_wait" if point.backend is Backend.GIN else "cuco_wait",
        # global_barrier hands the credit over in the barrier kernel
        credit_in_receive=device and point.sync_scope is not SyncScope.GLOBAL_BARRIER,
    )


register_renderer("kv_cache_transfer", render)
