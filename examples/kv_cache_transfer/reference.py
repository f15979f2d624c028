"""Reference and input builder for disaggregated-serving KV-cache transfer (torch + torch.distributed).

World n is even. Prefill rank p < n/2 holds activations X [L, T, H] (one [T, H] slice per layer)
and KV projection weights W [L, H, 2*Dkv]; it computes KV_l = X_l @ W_l for every layer and
outputs its KV cache [L, T, 2*Dkv]. Decode rank p + n/2 outputs the KV cache it received from
p, which must equal p's. Decode ranks' inputs are dummies of the same shapes. Runs on gloo and NCCL.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks and elements (gen is seeded per rank)."""
    layers, t, h, d = dims["l"], dims["t"], dims["h"], 2 * dims["dkv"]
    # a per-layer offset too, so a chunk sent under the wrong layer cannot pass
    x = torch.randn(layers, t, h, generator=gen) + 0.25 * rank + 0.1 * torch.arange(layers).view(-1, 1, 1)
    w = torch.randn(layers, h, d, generator=gen) / h**0.5
    return {"x": x.to(dtype), "w": w.to(dtype)}


def kv_cache(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """KV_l = X_l @ W_l for every layer, accumulated in fp32 and rounded once, as a tuned GEMM does."""
    return torch.bmm(x.float(), w.float()).to(x.dtype)


def reference(inputs: dict, dims: dict, group) -> dict:
    x, w = inputs["x"], inputs["w"]
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    half = world // 2
    if rank < half:
        kv = kv_cache(x, w)
        dist.send(kv.contiguous(), dist.get_global_rank(group, rank + half), group=group)
    else:
        kv = torch.empty(x.shape[0], x.shape[1], w.shape[2], dtype=x.dtype)
        dist.recv(kv, dist.get_global_rank(group, rank - half), group=group)
    return {"kv": kv}
