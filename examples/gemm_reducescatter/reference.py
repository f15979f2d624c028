"""Reference and input builder for row-parallel GEMM + reduce-scatter (torch + torch.distributed).

Rank r holds A_r [M, K/n] (activations split along K, the output of a column-parallel layer)
and B_r [K/n, N] (row-parallel weight); its partial product is P_r = A_r @ B_r [M, N] and its
result is C_r = sum_j P_j[r*M/n:(r+1)*M/n, :], shape [M/n, N]. Runs on gloo (CPU) and NCCL.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks and elements (gen is seeded per rank)."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    kl = k // world
    a = torch.randn(m, kl, generator=gen) + 0.25 * rank
    b = torch.randn(kl, n, generator=gen) / k**0.5
    return {"a": a.to(dtype), "b": b.to(dtype)}


def reference(inputs: dict, dims: dict, group) -> dict:
    a, b = inputs["a"], inputs["b"]
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    # fp32 partials summed in fp32 and rounded once, as a tuned GEMM + fp32-accumulating RS does.
    # gloo has no reduce-scatter: an all-reduce then this rank's rows is the same sum.
    total = a.float() @ b.float()
    dist.all_reduce(total, group=group)
    shard = total.shape[0] // world
    return {"c": total[rank * shard:(rank + 1) * shard].contiguous().to(a.dtype)}
