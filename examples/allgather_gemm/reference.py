"""Reference and input builder for tensor-parallel all-gather + GEMM (torch + torch.distributed).

Rank r holds A_r [M/n, K] (sequence-parallel activations) and B_r [K, N/n] (column-parallel
weight); it computes C_r = allgather(A) @ B_r, shape [M, N/n]. Runs on gloo (CPU) and NCCL.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks and elements (gen is seeded per rank)."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    a = torch.randn(m // world, k, generator=gen) + 0.25 * rank
    b = torch.randn(k, n // world, generator=gen) / k**0.5
    return {"a": a.to(dtype), "b": b.to(dtype)}


def reference(inputs: dict, dims: dict, group) -> dict:
    a, b = inputs["a"], inputs["b"]
    world = dist.get_world_size(group)
    shards = [torch.empty_like(a) for _ in range(world)]
    dist.all_gather(shards, a.contiguous(), group=group)
    gathered = torch.cat(shards, dim=0)
    # Accumulate in fp32 and round once, as a tuned GEMM does.
    return {"c": (gathered.float() @ b.float()).to(a.dtype)}
