"""Megatron-LM's ColumnParallelLinear as it is constructed by default (bias=True) with sequence
parallelism (KernelBench form): the module holds this rank's [out/n, in] weight shard and its [out/n]
bias shard as parameters, gathers the sequence-sharded activations along the sequence and applies
F.linear with both. Expected: allgather_gemm with bias=1, both parameters lifted into inputs and
the weight read transposed."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

SEQ, HIDDEN, OUT = 64, 96, 128


class Model(nn.Module):
    def __init__(self, input_size: int, output_size: int, bias: bool = True):
        super().__init__()
        world = dist.get_world_size()
        self.weight = nn.Parameter(torch.empty(output_size // world, input_size))
        nn.init.xavier_normal_(self.weight)
        # Megatron zeroes its bias at init; a trained one is not, and a zero bias would read as none
        self.bias = nn.Parameter(0.1 * torch.randn(output_size // world)) if bias else None

    def forward(self, input_):
        world = dist.get_world_size()
        parts = [torch.empty_like(input_) for _ in range(world)]
        dist.all_gather(parts, input_.contiguous())
        return F.linear(torch.cat(parts, dim=0), self.weight, self.bias)


def get_inputs():
    return [torch.randn(SEQ // dist.get_world_size(), HIDDEN)]


def get_init_inputs():
    return [HIDDEN, OUT]
