"""Megatron-LM's ColumnParallelLinear with sequence parallelism as a module holding its own weight
(KernelBench form): the weight is an nn.Parameter of this rank's [out/n, in] shard, initialised in
the constructor, and forward() takes only the sequence-sharded activations, gathers them and
applies F.linear. Expected: allgather_gemm, the parameter lifted into an input and read transposed."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

SEQ, HIDDEN, OUT = 64, 96, 128


class Model(nn.Module):
    def __init__(self, input_size: int, output_size: int):
        super().__init__()
        world = dist.get_world_size()
        self.weight = nn.Parameter(torch.empty(output_size // world, input_size))
        nn.init.xavier_normal_(self.weight)

    def forward(self, input_):
        world = dist.get_world_size()
        parts = [torch.empty_like(input_) for _ in range(world)]
        dist.all_gather(parts, input_.contiguous())
        return F.linear(torch.cat(parts, dim=0), self.weight)


def get_inputs():
    return [torch.randn(SEQ // dist.get_world_size(), HIDDEN)]


def get_init_inputs():
    return [HIDDEN, OUT]
