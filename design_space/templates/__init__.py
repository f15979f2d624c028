"""Template families, one module per fusion pattern; importing registers them."""

from design_space.templates import allgather_gemm  # noqa: F401  (registers the pattern)
from design_space.templates import kv_cache_transfer  # noqa: F401
from design_space.templates import gemm_reducescatter  # noqa: F401
from design_space.templates import gemm_allreduce  # noqa: F401
from design_space.templates import ring_attention  # noqa: F401
from design_space.templates import moe_dispatch_combine  # noqa: F401
