"""Attention probabilities with the head dim split across the ranks (row-parallel scores): each rank
multiplies its slice of q and k, the partial scores are all-reduced, scaled and causally masked, the
softmax runs in fp32, and each rank keeps its block of query rows (gloo has no reduce-scatter: an
all-reduce, then this rank's chunk), RMS-normalised. A plain function with its own input builder.
Expected: no family matches; `cuco init --traced --reference scores --inputs make_inputs` replays it."""

import torch
import torch.distributed as dist

T, D = 32, 64  # tokens, head dim (split across the ranks)


def scores(q, k, group=None):
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    s = q @ k.t()                                       # [T, T], partial over this rank's head dims
    dist.all_reduce(s, group=group)
    s = s * D ** -0.5
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    s = s.masked_fill(j > i, float("-inf"))             # causal
    p = torch.softmax(s.float(), dim=-1)
    rows = p.chunk(world, dim=0)[rank]                  # this rank's query rows
    return rows * torch.rsqrt(rows.pow(2).mean(dim=-1, keepdim=True) + 1e-6)


def make_inputs(rank, world, gen):
    return [torch.randn(T, D // world, generator=gen), torch.randn(T, D // world, generator=gen)]
