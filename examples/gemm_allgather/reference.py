"""Reference and input builder for column-parallel GEMM + all-gather (Megatron-LM's
ColumnParallelLinear with gather_output=True), torch + torch.distributed (runs on gloo and NCCL).

Every rank holds the same activations X [M, K] (replicated: the input of a column-parallel layer),
its column shard of the weight W_r [K, N/n] and of the bias bias_r [N/n]. It computes
Y_r = X @ W_r (+ bias_r when dims["bias"] == 1), and every rank outputs the gathered
Y = [Y_0 | Y_1 | ... | Y_{n-1}], shape [M, N] (column blocks concatenated along N).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

X_SEED = 20262  # X is replicated: the same on every rank, so not from the per-rank gen


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: X identical on every rank, W_r and bias_r random and different per rank
    (gen is seeded per rank), all non-uniform."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    nl = n // world
    shared = torch.Generator().manual_seed(X_SEED + 7919 * m + k)
    x = torch.randn(m, k, generator=shared) + 0.25
    w = torch.randn(k, nl, generator=gen) / k**0.5
    bias = 0.5 * torch.randn(nl, generator=gen) + 0.25 * rank
    return {"x": x.to(dtype), "w": w.to(dtype), "bias": bias.to(dtype)}


def reference(inputs: dict, dims: dict, group) -> dict:
    x, w, bias = inputs["x"], inputs["w"], inputs["bias"]
    # Accumulate in fp32, add the bias in fp32 and round once, as a tuned GEMM epilogue does.
    y = x.float() @ w.float()
    if dims["bias"] == 1:
        y = y + bias.float()
    y = y.to(x.dtype).contiguous()
    blocks = [torch.empty_like(y) for _ in range(dist.get_world_size(group))]
    dist.all_gather(blocks, y, group=group)
    return {"y": torch.cat(blocks, dim=1)}
