"""Kernel templates of the ring_attention family: renders a design point into one candidate source.

The CUDA lives beside this file as Jinja2 templates: ``candidate.cu.j2`` (the frozen problem and
buffer layout, then the evolve block) includes ``ring`` (constants, the tile configurations, ring
bookkeeping), ``sync`` (signal primitives, the sync scope's arrivals and credits), ``attention``
(the online-softmax compute on the tensor-core GEMM tile), ``comm_device`` (lsa / gin
communication CTAs) and ``host`` (each backend's host-side ring and the placement's ``cuco_run``).
"""

from __future__ import annotations

from design_space.families.ring_attention import MAX_D, SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (which must be supported and not excluded)."""
    require_renderable("ring_attention", SUPPORTED, excluded, point)
    return render_point(
        "ring_attention", point,
        max_d=MAX_D,
    )


register_renderer("ring_attention", render)
