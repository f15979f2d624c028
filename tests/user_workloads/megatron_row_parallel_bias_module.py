"""Megatron-LM style RowParallelLinear with a bias, written as a module that holds its weights
(KernelBench form): this rank's [out, in/n] weight slice is applied with F.linear, the partial
outputs are all-reduced, and the bias (the same on every rank) is added once after the sum.
Expected: gemm_allreduce with the bias epilogue, the weight read transposed."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TOKENS, IN, OUT = 32, 128, 64


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        world = dist.get_world_size()
        self.weight = nn.Parameter(torch.empty(out_features, in_features // world))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        y = F.linear(x, self.weight)
        dist.all_reduce(y)
        return y + self.bias


def get_inputs():
    return [torch.randn(TOKENS, IN // dist.get_world_size())]


def get_init_inputs():
    return [IN, OUT]
