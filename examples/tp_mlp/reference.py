"""Reference and input builder for the tensor-parallel MLP block with sequence parallelism (torch +
torch.distributed; runs on gloo and NCCL).

Rank r holds x_r [M/n, H] (its rows of the sequence), w1_r and w3_r [H, F/n] (its columns of the up
and gate projections; w3 serves SwiGLU only) and w2_r [F/n, H] (its rows of the down projection).
It gathers X = [x_0; ...; x_{n-1}] [M, H], computes U_r = act(X @ w1_r) [M, F/n] (SwiGLU:
silu(X @ w1_r) * (X @ w3_r)) and its partial P_r = U_r @ w2_r [M, H], and keeps rows r of
sum_j P_j: y_r [M/n, H]. dims["act"]: 1 GELU (tanh approximation), 2 SiLU, 3 SwiGLU.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

GELU_TANH, SILU, SWIGLU = 1, 2, 3


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks and elements (gen is seeded per rank)."""
    m, h, f = dims["m"], dims["h"], dims["f"]
    shard, fl = m // world, f // world
    x = torch.randn(shard, h, generator=gen) + 0.25 * rank
    w1 = torch.randn(h, fl, generator=gen) / h**0.5
    w3 = torch.randn(h, fl, generator=gen) / h**0.5
    w2 = torch.randn(fl, h, generator=gen) / f**0.5
    return {"x": x.to(dtype), "w1": w1.to(dtype), "w3": w3.to(dtype), "w2": w2.to(dtype)}


def activation(a: torch.Tensor, b: torch.Tensor, act: int) -> torch.Tensor:
    """act(a), or silu(a) * b for SwiGLU; in the tensors' own precision."""
    if act == GELU_TANH:
        return F.gelu(a, approximate="tanh")
    if act == SILU:
        return F.silu(a)
    if act == SWIGLU:
        return F.silu(a) * b
    raise ValueError(f"act={act} is not an activation: use 1 (GELU-tanh), 2 (SiLU) or 3 (SwiGLU)")


def reference(inputs: dict, dims: dict, group) -> dict:
    x, w1, w3, w2 = inputs["x"], inputs["w1"], inputs["w3"], inputs["w2"]
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x.contiguous(), group=group)
    big = torch.cat(parts).float()
    # fp32 GEMMs; U rounded once to the dtype (the down projection reads it as an operand), the
    # partials summed in fp32 and rounded once, as tuned kernels do. gloo has no reduce-scatter:
    # an all-reduce then this rank's rows is the same sum.
    u = activation(big @ w1.float(), big @ w3.float() if dims["act"] == SWIGLU else None, dims["act"]).to(x.dtype)
    total = u.float() @ w2.float()
    dist.all_reduce(total, group=group)
    shard = total.shape[0] // world
    return {"y": total[rank * shard:(rank + 1) * shard].contiguous().to(x.dtype)}
