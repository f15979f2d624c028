"""Reference and input builder for tensor-parallel all-gather + GEMM (torch + torch.distributed).

Rank r holds A_r [M/n, K] (sequence-parallel activations), B_r [K, N/n] (column-parallel weight)
and bias_r [N/n] (its column shard of the bias); it computes C_r = allgather(A) @ B_r, plus bias_r
when dims["bias"] == 1 (Megatron-LM's ColumnParallelLinear with sequence parallelism and its
default bias=True), shape [M, N/n]. A shape without the "bias" dim means 2: no bias. Runs on gloo
(CPU) and NCCL.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

BIAS_ON = 1


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks and elements (gen is seeded per rank)."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    a = torch.randn(m // world, k, generator=gen) + 0.25 * rank
    b = torch.randn(k, n // world, generator=gen) / k**0.5
    # drawn after A and B, so specs without a bias keep the inputs they had
    bias = 0.5 * torch.randn(n // world, generator=gen) + 0.25 * rank
    return {"a": a.to(dtype), "b": b.to(dtype), "bias": bias.to(dtype)}


def reference(inputs: dict, dims: dict, group) -> dict:
    a, b = inputs["a"], inputs["b"]
    world = dist.get_world_size(group)
    shards = [torch.empty_like(a) for _ in range(world)]
    dist.all_gather(shards, a.contiguous(), group=group)
    gathered = torch.cat(shards, dim=0)
    # Accumulate in fp32, add the bias in fp32 and round once, as a tuned GEMM epilogue does.
    c = gathered.float() @ b.float()
    if dims.get("bias") == BIAS_ON:
        c = c + inputs["bias"].float()
    return {"c": c.to(a.dtype)}
