"""Kernel templates of the reduce-scatter + residual + RMSNorm family: ``candidate.cu.j2`` and the
pieces it includes render a design point into one candidate source.

Rank r holds P_r [M, N] (ctx.in[0], the un-reduced output of a row-parallel layer), gamma [N]
(ctx.in[1]) and R_r [M/n, N] (ctx.in[2], its residual rows); it outputs y_r [M/n, N] (ctx.out[0]):
h_r = sum_j P_j[rows of r] (+ R_r when dims[3] == 1), RMSNorm(h_r) * gamma when dims[2] == 1.
The symmetric buffer holds STAGE [M][N] (a copy of P_r where a put, the switch or the library
must read it) and RECV [world][M/n][N] (the peers' partials of this rank's rows). A chunk is
whole rows of one row block (a row's norm needs all N columns): contiguous in P, STAGE and RECV.

Pieces: ``layout`` (chunks, STAGE/RECV offsets), ``issuer`` (who moves or reduces a chunk),
``finish`` (the owner's sum in rank order, residual and norm of a row), ``arrival`` (signals and
waits of pushed chunks), ``push`` (lsa and gin), ``stage`` (P into STAGE, multimem and
host_nccl), ``multimem`` (the owner's rows reduced through the switch), ``kernels`` (the sum +
norm, push and fused kernels), ``host*`` (cuco_run per backend and placement).
"""

from __future__ import annotations

from design_space.dimensions import Backend, Issuer, Placement
from design_space.families.reducescatter_rmsnorm import SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values in ``SUPPORTED``, not ``excluded``)."""
    require_renderable("reducescatter_rmsnorm", SUPPORTED, excluded, point)
    return render_point(
        "reducescatter_rmsnorm", point,
        # host_nccl + stream_overlap: one library reduce-scatter per chunk reads chunk ch of every
        # row block side by side, so STAGE is laid out chunk-major.
        chunk_major=point.backend is Backend.HOST_NCCL and point.placement is Placement.STREAM_OVERLAP,
        # the copy engines and the library move the bytes; kernels beside them work in whole CTAs
        group="cta" if point.issuer is Issuer.COPY_ENGINE else point.issuer.value,
    )


register_renderer("reducescatter_rmsnorm", render)
