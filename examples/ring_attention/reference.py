"""Reference and input builder for context-parallel ring attention (torch + torch.distributed).

Rank r holds Q_r, K_r, V_r of shape [H, S/n, D]: sequence positions [r S/n, (r+1) S/n). It computes
O_r = softmax(Q_r K^T / sqrt(D)) V over the whole sequence, with the causal mask by global
position (key position <= query position) when dims["mask"] is 2 (1: full attention). Runs on gloo (CPU) and NCCL.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks and elements (gen is seeded per rank)."""
    h, sl, d = dims["h"], dims["s"] // world, dims["d"]
    q = torch.randn(h, sl, d, generator=gen) * (1.0 + 0.1 * rank)
    k = torch.randn(h, sl, d, generator=gen) + 0.1 * rank
    v = torch.randn(h, sl, d, generator=gen) + 0.25 * rank
    return {"q": q.to(dtype), "k": k.to(dtype), "v": v.to(dtype)}


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_offset: int, causal: bool) -> torch.Tensor:
    """fp32 softmax(q k^T / sqrt(D)) v; q's rows sit at global positions q_offset.. (for the mask)."""
    scores = q.float() @ k.float().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        qpos = torch.arange(q.shape[-2]).unsqueeze(1) + q_offset
        kpos = torch.arange(k.shape[-2]).unsqueeze(0)
        scores = scores.masked_fill(kpos > qpos, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v.float()


def reference(inputs: dict, dims: dict, group) -> dict:
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    # Gather every rank's K and V (fp32 is exact for bf16/fp16 and gloo takes it everywhere).
    ks = [torch.empty(k.shape) for _ in range(world)]
    vs = [torch.empty(v.shape) for _ in range(world)]
    dist.all_gather(ks, k.float().contiguous(), group=group)
    dist.all_gather(vs, v.float().contiguous(), group=group)
    o = attention(q, torch.cat(ks, dim=1), torch.cat(vs, dim=1), rank * q.shape[1], dims["mask"] == 2)
    return {"o": o.to(q.dtype)}  # computed in fp32, rounded once
