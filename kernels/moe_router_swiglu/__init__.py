"""Kernel templates of the moe_router_swiglu family: renders a design point into one candidate source.

The family shares moe_dispatch_combine's templates (kernels/moe_dispatch_combine: layout,
signals, transfers, expert tiles, combine, host sides) and renders them with two flags of the
render context: ``router`` (the routing comes from ``router.cuh.j2`` here: logits = x @ wg on the
tensor-core GEMM tile, each token's top k and their softmax, launched before the layout) and
``swiglu`` (the expert's first GEMM becomes the gate and up GEMMs over ``w13`` with the epilogue of
``swiglu.cuh.j2`` here). With both off the templates render moe_dispatch_combine byte for byte.
"""

from __future__ import annotations

from design_space.families.moe_router_swiglu import MAX_CHUNKS, MAX_WORKERS, SCRATCH_ROWS, PATTERN
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (its values in the family's ``supported``, not ``excluded``)."""
    require_renderable("moe_router_swiglu", PATTERN.supported, PATTERN.excluded, point)
    return render_point(
        "moe_dispatch_combine", point,  # the shared candidate template, with this family's flags
        max_chunks=MAX_CHUNKS,
        scratch_rows=SCRATCH_ROWS,
        max_workers=MAX_WORKERS,
        router=True,
        swiglu=True,
    )


register_renderer("moe_router_swiglu", render)
