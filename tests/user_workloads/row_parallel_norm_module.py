"""A row-parallel projection followed by the next layer's RMSNorm, written as modules that hold
their weights (KernelBench form): nn.Linear(in/n, out, bias=False) for this rank's input shard and
an RMSNorm whose scale starts at ones (torch.nn.RMSNorm). Expected: gemm_allreduce with the norm,
both parameters lifted into inputs (the projection's read transposed)."""

import torch
import torch.distributed as dist
import torch.nn as nn

TOKENS, IN, OUT = 32, 128, 64


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.proj = nn.Linear(in_features // dist.get_world_size(), out_features, bias=False)
        self.norm = nn.RMSNorm(out_features, eps=1e-6)

    def forward(self, x):
        y = self.proj(x)
        dist.all_reduce(y)
        return self.norm(y)


def get_inputs():
    return [torch.randn(TOKENS, IN // dist.get_world_size())]


def get_init_inputs():
    return [IN, OUT]
