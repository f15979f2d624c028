"""The built-in workload families, one module per fusion pattern (dims, buffers, cost, rules);
importing registers them. Their kernel templates live in the ``kernels`` package."""

from design_space.families import allgather_gemm  # noqa: F401  (registers the pattern)
from design_space.families import kv_cache_transfer  # noqa: F401
from design_space.families import gemm_reducescatter  # noqa: F401
from design_space.families import gemm_allreduce  # noqa: F401
from design_space.families import ring_attention  # noqa: F401
from design_space.families import moe_dispatch_combine  # noqa: F401
from design_space.families import gemm_allgather  # noqa: F401
from design_space.families import moe_router_swiglu  # noqa: F401
from design_space.families import reducescatter_rmsnorm  # noqa: F401
from design_space.families import ulysses_alltoall  # noqa: F401
from design_space.families import tp_mlp  # noqa: F401
