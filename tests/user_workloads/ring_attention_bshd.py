"""Context-parallel attention written the way flash-attention users hold tensors, [B, S, H, D]
with the sequence sharded: the family takes [B*H, S, D]. Expected: stops before the first
candidate, naming the layout."""

import torch
import torch.distributed as dist

B, S, H, D = 1, 64, 2, 16


def solution(q, k, v):
    world = dist.get_world_size()
    ks = [torch.empty_like(k) for _ in range(world)]
    vs = [torch.empty_like(v) for _ in range(world)]
    dist.all_gather(ks, k.contiguous())
    dist.all_gather(vs, v.contiguous())
    kk, vv = torch.cat(ks, dim=1), torch.cat(vs, dim=1)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, kk) / D**0.5
    return torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), vv)


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(B, S // world, H, D) for _ in range(3)]
