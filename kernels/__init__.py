"""cuco's kernel sources and the tools that read CUDA text.

- one subpackage per template family: real CUDA templates (Jinja2 over ``.cu``/``.cuh`` text) and
  the renderer that turns a design point into one candidate source; importing this package
  registers every family's renderer with ``design_space.patterns`` (built-ins go through the same
  registry as plugins);
- CUDA-text tools: ``cuda_scan`` (comments, strings, brackets), ``evolve_blocks`` (what mutation
  may change), ``seed_analysis`` (what a host-driven seed program does).

Depends only on ``design_space``; the evaluator and the agents may import it (tests/test_dependency_rule.py).
"""

from kernels import allgather_gemm  # noqa: F401,E402  (registers the family's renderer)
from kernels import gemm_allreduce  # noqa: F401,E402
from kernels import gemm_reducescatter  # noqa: F401,E402
from kernels import kv_cache_transfer  # noqa: F401,E402
from kernels import moe_dispatch_combine  # noqa: F401,E402
from kernels import ring_attention  # noqa: F401,E402
from kernels import gemm_allgather  # noqa: F401,E402
from kernels import moe_router_swiglu  # noqa: F401,E402
from kernels import reducescatter_rmsnorm  # noqa: F401,E402
from kernels import ulysses_alltoall  # noqa: F401,E402
from kernels import tp_mlp  # noqa: F401,E402
