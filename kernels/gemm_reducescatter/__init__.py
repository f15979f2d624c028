"""Kernel templates of the GEMM + reduce-scatter family: ``candidate.cu.j2`` and the pieces it
includes render a design point into one candidate source.

Rank r holds A_r [M, K/n] (ctx.in[0]) and B_r [K/n, N] (ctx.in[1]); its partial product is
P_r = A_r @ B_r [M, N] (the tensor-core GEMM tile, fp32 accumulators) and its result C_r
[M/n, N] (ctx.out[0]) is the sum over ranks j of row block r of P_j. The symmetric buffer holds
STAGE [M][N] (this rank's partial, row block d = the rows rank d owns) and RECV [world][M/n][N]
(the partials peers sent for this rank's rows). A chunk is a band of rows of one row block, all
N columns: contiguous in STAGE and RECV.

Pieces: ``layout`` (chunks, bands, STAGE/RECV offsets), ``gemm`` and ``ready`` (partial tiles and
what a finished tile signals), ``arrival`` (signals and waits of pushed chunks), ``finish`` (the
owner's sum), ``push`` (lsa and gin per issuer), ``multimem`` (the owner reduces through the
switch), ``launch`` (kernels and grids), ``host*`` (cuco_run per backend and placement).
"""

from __future__ import annotations

from design_space.dimensions import Backend, Placement
from design_space.families.gemm_reducescatter import SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values in ``SUPPORTED``, not ``excluded``)."""
    require_renderable("gemm_reducescatter", SUPPORTED, excluded, point)
    return render_point(
        "gemm_reducescatter", point,
        # host_nccl + stream_overlap: one library reduce-scatter per chunk reads chunk ch of every
        # row block side by side, so STAGE is laid out chunk-major.
        chunk_major=point.backend is Backend.HOST_NCCL and point.placement is Placement.STREAM_OVERLAP,
        # this phase announces the call (cuco_enter.h); a family that runs it after a phase that
        # already did (tp_mlp) sets it false: a call is announced once
        announce_call=True,
    )


register_renderer("gemm_reducescatter", render)
