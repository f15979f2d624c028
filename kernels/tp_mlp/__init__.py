"""Kernel templates of the tensor-parallel MLP family: ``candidate.cu.j2`` and the pieces it includes
render a design point into one candidate source.

Rank r holds x_r [M/n, H] (ctx.in[0]), w1_r and w3_r [H, F/n] (ctx.in[1], ctx.in[2]: column-parallel
up and gate projections, w3 used by SwiGLU only) and w2_r [F/n, H] (ctx.in[3], row-parallel down
projection). Two phases under one design point:

1. ``namespace up``: all-gather + GEMM, the all-gather + GEMM family's own pieces (``chunks``,
   ``sync``, ``push``, ``issuer`` of kernels/allgather_gemm, included as they are) with this
   family's tiles (``up_gemm``: the activation, or SwiGLU's two accumulators, in the epilogue) and
   host code (``up_host``); U = act(X @ w1) [M, F/n] goes to the workspace.
2. ``namespace down``: GEMM + reduce-scatter, the GEMM + reduce-scatter family's pieces
   (``finish``, ``push``, ``multimem``, ``launch``, ``host_multimem`` of kernels/gemm_reducescatter,
   included as they are) with copies that place phase 2 after phase 1 in the symmetric buffer
   (``down_layout``: STAGE and RECV after GATHER; ``down_host_nccl``) and in the signal pad
   (``down_arrival``, ``down_ready``, ``down_host``, ``down_host_push``: slots from DOWN_SLOTS),
   and tiles that read U (``down_gemm``); y_r [M/n, H] is ctx.out[0].

``host`` runs the phases one after the other on the harness's stream, or as one persistent kernel
(fused_persistent) in which a partial tile waits for the U rows it reads. Each phase sees its
family's ``Problem`` (``up::problem``, ``down::problem``), derived from the frozen ``mlp::problem``.
"""

from __future__ import annotations

from design_space.dimensions import Backend, Placement
from design_space.families.tp_mlp import SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point

# Chunk signals per source rank and phase: two phases of CUCO_MAX_RANKS x MAX_CHUNKS slots must fit
# GIN's 4096 signals (and phase 2's band slots the pad below READY_BASE); host_nccl keeps one event
# per chunk.
_MAX_CHUNKS = {Backend.GIN: 64, Backend.HOST_NCCL: 64}


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values in ``SUPPORTED``, not ``excluded``)."""
    require_renderable("tp_mlp", SUPPORTED, excluded, point)
    host_driven = point.backend is Backend.HOST_NCCL
    pipelined = host_driven and point.placement is Placement.STREAM_OVERLAP
    return render_point(
        "tp_mlp", point,
        max_chunks=_MAX_CHUNKS.get(point.backend, 128),
        host_driven=host_driven,
        # host_nccl + stream_overlap: one library all-gather per chunk lays chunk ch of every rank out
        # contiguously, and one reduce-scatter per chunk reads STAGE chunk-major.
        chunked_rows=pipelined,
        chunk_major=pipelined,
    )


register_renderer("tp_mlp", render)
