"""Kernel templates of the moe_dispatch_combine family: renders a design point into one candidate source.

The CUDA lives beside this file as Jinja2 templates: ``candidate.cu.j2`` (the frozen problem
layout, then the evolve block) includes ``routing`` (constants, block layout, the routing
layout), ``sync`` (signals and waits per backend and sync scope), ``send`` (device-initiated
transfers per issuer), ``experts`` (both expert GEMMs on the tensor-core tile, the weighted
combine) and the host side: ``host_device`` (lsa, gin) or ``host_issued`` with
``host_copy_engine`` / ``host_nccl``.
"""

from __future__ import annotations

from design_space.families.moe_dispatch_combine import MAX_CHUNKS, MAX_WORKERS, SCRATCH_ROWS, SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values in ``SUPPORTED``, not ``excluded``)."""
    require_renderable("moe_dispatch_combine", SUPPORTED, excluded, point)
    return render_point(
        "moe_dispatch_combine", point,
        max_chunks=MAX_CHUNKS,
        scratch_rows=SCRATCH_ROWS,
        max_workers=MAX_WORKERS,
        router=False,  # moe_router_swiglu renders these templates with its router and SwiGLU experts
        swiglu=False,
    )


register_renderer("moe_dispatch_combine", render)
