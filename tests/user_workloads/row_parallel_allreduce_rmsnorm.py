"""A row-parallel projection whose all-reduced output goes straight into the next layer's RMSNorm
(TokenWeave-style fusion), as a plain function with its input builder. Expected: gemm_allreduce
with the norm."""

import torch
import torch.distributed as dist

M, K, N = 16, 64, 96


def layer(x, w, gamma, group=None):
    y = x @ w
    dist.all_reduce(y, group=group)
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y * gamma


def make_inputs(rank, world):
    g = torch.Generator().manual_seed(7)  # the norm weight is the same on every rank
    return [torch.randn(M, K // world), torch.randn(K // world, N), 1 + 0.1 * torch.randn(N, generator=g)]
