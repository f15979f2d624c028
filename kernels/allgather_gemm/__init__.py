"""Kernel templates of the all-gather + GEMM family: ``candidate.cu.j2`` and the pieces it
includes render a design point into one candidate source.

Rank r holds A_r [M/n, K] (ctx.in[0]) and B_r [K, N/n] (ctx.in[1]); it computes
C_r = allgather(A) @ B_r [M, N/n] (ctx.out[0]) with the tensor-core GEMM tile. Peers' A shards
land in every rank's symmetric buffer (the gathered A, [M, K]); a rank reads its own rows straight
from A_r. Output tiles are shard-aligned, so a tile's rows come from exactly one rank.

Pieces: ``chunks`` (transfer chunks, where a tile's A rows live), ``sync`` (signal slots and
waits per sync scope), ``push`` and ``issuer`` (how a chunk travels and who moves it),
``gemm`` (tiles and their kernels), ``host`` (cuco_run per placement; host_nccl's baseline).
"""

from __future__ import annotations

from design_space.dimensions import Backend, Placement
from design_space.families.allgather_gemm import SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point

# Signal slots per source rank: the pad has 32768 user slots, GIN 4096 signals (32 ranks each);
# host_nccl keeps one event per chunk.
_MAX_CHUNKS = {Backend.GIN: 128, Backend.HOST_NCCL: 64}


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (which must be in ``SUPPORTED`` and not excluded)."""
    require_renderable("allgather_gemm", SUPPORTED, excluded, point)
    host_driven = point.backend is Backend.HOST_NCCL
    return render_point(
        "allgather_gemm", point,
        max_chunks=_MAX_CHUNKS.get(point.backend, 1024),
        host_driven=host_driven,
        # host_nccl + stream_overlap: one library all-gather per chunk lays chunk ch of every rank
        # out contiguously ([chunk][rank][rows]), so a row's home depends on its chunk.
        chunked_rows=host_driven and point.placement is Placement.STREAM_OVERLAP,
    )


register_renderer("allgather_gemm", render)
