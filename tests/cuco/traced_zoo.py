"""Every kind of op the traced baseline replays, in one workload (tests/cuco/test_traced_baseline.py):
elementwise, in-place (on an input too), a constant tensor, casts, fills, arange, where, clamp, cat, matrix products (one with B transposed),
log_softmax, reductions with and without indices, and every collective it stages (all_reduce max and
fp32 sum, all_gather_into_tensor, all_to_all_single, broadcast)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

M, K, N = 8, 16, 12


def solution(x, w):
    world, rank = dist.get_world_size(), dist.get_rank()
    dist.all_reduce(x, op=dist.ReduceOp.MAX)            # on an input, in place; max: all-gather + local reduce
    h = F.gelu(x @ w, approximate="tanh")                # [M, N]
    h.mul_(torch.tensor(0.5)).add_(torch.sigmoid(h))     # in place; a constant built outside the ops
    g = torch.empty(world * M, N, dtype=h.dtype)
    dist.all_gather_into_tensor(g, h)
    a = torch.empty_like(g)
    dist.all_to_all_single(a, g)
    b = a.view(world, M, N)
    att = torch.bmm(b, b.transpose(1, 2))                # [world, M, M], B transposed
    lp = torch.log_softmax(att.float(), dim=-1)
    top = lp.amax(dim=0)                                 # [M, M]
    vals, _ = lp.max(dim=-1)                             # [world, M]
    keep = torch.arange(M)[:, None] >= torch.arange(M)[None, :]
    y = torch.where(keep, top, torch.zeros_like(top)).clamp(-5, 5)
    z = torch.cat([y, vals.t()], dim=1)                  # [M, M + world]
    dist.broadcast(z, src=world - 1)
    z = F.silu(z) + x[:, :1].float() * rank              # a number that differs between ranks
    s = z.sum(dim=0, keepdim=True)
    p = torch.ones(M, 1, dtype=torch.float32)
    dist.all_reduce(p)                                   # fp32 sum: an all-gather, then a local sum
    return z - s / M * p / world, torch.exp(-s.abs()).expand(2, -1)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N) / K ** 0.5]
