"""Kernel templates of the GEMM + all-gather family: ``candidate.cu.j2`` and the pieces it
includes render a design point into one candidate source.

Rank r holds X [M, K] (ctx.in[0], the same on every rank), W_r [K, N/n] (ctx.in[1]) and bias_r
[N/n] (ctx.in[2], read when dims[3] == 1); every rank outputs Y [M, N] (ctx.out[0]) whose column
block j is X @ W_j (+ bias_j). The symmetric buffer holds ALL [world][M][N/n]: the GEMM writes
its own tile (the tensor-core tile, bias in the epilogue) to Y and to ALL[r], chunks (bands of
rows, all N/n columns) of ALL[r] travel to every peer's ALL[r], and each rank copies the peers'
blocks from ALL into Y's column blocks as they arrive.

Pieces: ``layout`` (chunks, bands, ALL offsets), ``gemm`` (tiles, the own block, band readiness),
``arrival`` (signals and waits of pushed chunks), ``issuer`` and ``push`` (lsa, gin, multimem),
``collect`` (peers' blocks into Y), ``launch`` (kernels and grids), ``host*`` (cuco_run per
backend and placement).
"""

from __future__ import annotations

from design_space.dimensions import Backend, Placement
from design_space.families.gemm_allgather import SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values in ``SUPPORTED``, not ``excluded``)."""
    require_renderable("gemm_allgather", SUPPORTED, excluded, point)
    return render_point(
        "gemm_allgather", point,
        # host_nccl + stream_overlap: one library all-gather per chunk lays chunk ch of every rank
        # side by side, so ALL is laid out chunk-major.
        chunk_major=point.backend is Backend.HOST_NCCL and point.placement is Placement.STREAM_OVERLAP,
        # split_put_wait and fused_persistent push while the GEMM runs: finished tiles count per band.
        band_signals=point.placement in (Placement.SPLIT_PUT_WAIT, Placement.FUSED_PERSISTENT)
        and point.backend is not Backend.HOST_NCCL,
    )


register_renderer("gemm_allgather", render)
