"""A plugin pattern (docs/custom_pattern.md): Megatron's column-parallel linear with sequence
parallelism, under its own names, rendered by the all-gather + GEMM templates."""

from design_space import Pattern, get_pattern, register_pattern
from design_space.families import allgather_gemm as ag

# The all-gather + GEMM templates read ctx.dims as (M, N, K), ctx.in as (A, B), ctx.out as (C):
# naming ours in that order is all it takes for their candidates to run this pattern's buffers.
_AS_AG = {"seq": "m", "ffn": "n", "hidden": "k"}


def _ag_dims(dims):
    return {_AS_AG[d]: v for d, v in dims.items() if d in _AS_AG}


PATTERN = Pattern(
    name="tp_column_linear",
    description="Y_r = allgather(X) @ W_r: sequence-parallel X [S/n, H], column-parallel W_r [H, F/n].",
    dims=("seq", "ffn", "hidden"),
    inputs=("x", "w"),
    outputs=("y",),
    supported=ag.SUPPORTED,
    cost=lambda dims, world, dtype: ag.cost(_ag_dims(dims), world, dtype),
    dim_problems=lambda dims, world: ag.dim_problems(_ag_dims(dims), world),
    symm_bytes=lambda dims, world, dtype: ag.symm_bytes(_ag_dims(dims), world, dtype),
    excluded=ag.excluded,
)


def render(point):
    import kernels  # noqa: F401  (registers the built-in templates)
    return get_pattern("allgather_gemm").render(point)


register_pattern(PATTERN, render)
