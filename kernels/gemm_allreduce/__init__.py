"""Kernel templates of the GEMM + all-reduce (+ RMSNorm) family: ``candidate.cu.j2`` and the pieces
it includes render a design point into one candidate source.

Rank r holds A_r [M, K/n] (ctx.in[0]), B_r [K/n, N] (ctx.in[1]) and gamma [N] (ctx.in[2]); every
rank outputs Y = sum_j A_j @ B_j [M, N] (ctx.out[0]), or RMSNorm(Y) * gamma when dims[3] == 1, or
Y + gamma (gamma as the layer's bias, added once after the sum) when dims[3] == 3.
A rank computes its partial P_r = A_r @ B_r with the tensor-core GEMM tile into its symmetric
buffer. Rows are split into owner blocks of R = ceil(M / n) rows and each block into chunks of
whole rows (RMSNorm needs whole rows); stage s holds chunk s of every owner block, so all ranks
produce what an owner needs in the same order.

Pieces: ``chunks`` (chunking, signal slots, the GEMM's tile shapes), ``issuer`` (who moves and
reduces a chunk), ``sync_scope`` (which slot a transfer signals, what a consumer waits for),
``gemm`` (the partial GEMM's tiles and kernel), ``comm_<design>`` (one per backend design, two
macros: ``prims`` before the sync scope, ``ops`` after the GEMM), ``comm_work`` (the comm side's
work items and kernels), ``host_*`` (cuco_run per backend kind and placement).
"""

from __future__ import annotations

from design_space.dimensions import Backend, Issuer, SyncScope
from design_space.families.gemm_allreduce import SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def _design(point: DesignPoint) -> str:
    """The communication design a backend renders: lsa is two-shot, or one-shot pull-and-sum
    when every chunk has its own signal."""
    if point.backend is Backend.LSA:
        return "lsa_one_shot" if point.sync_scope is SyncScope.PER_TILE_SIGNAL else "lsa_two_shot"
    return point.backend.value


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (which must be in ``SUPPORTED`` and not excluded)."""
    require_renderable("gemm_allreduce", SUPPORTED, excluded, point)
    return render_point(
        "gemm_allreduce", point,
        # the copy engines' reduce kernel sums with whole CTAs, and so does host_nccl's norm
        group="cta" if point.issuer is Issuer.COPY_ENGINE else point.issuer.value,
        design=_design(point),
    )


register_renderer("gemm_allreduce", render)
