"""Megatron-LM's ColumnParallelLinear with sequence parallelism, written as Megatron writes it: the
constructor keeps its sizes (input_size, output_size_per_partition) and forward() reshapes with
them, so the layer runs only at the sizes it was built with. Expected: allgather_gemm, with the
Model built again at every other size cuco runs it at (its constructor's arguments follow k and n)."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

SEQ, HIDDEN, OUT = 64, 96, 128


class Model(nn.Module):
    def __init__(self, input_size: int, output_size: int):
        super().__init__()
        self.input_size = input_size
        self.output_size_per_partition = output_size // dist.get_world_size()
        self.weight = nn.Parameter(torch.empty(self.output_size_per_partition, self.input_size))
        nn.init.xavier_normal_(self.weight)

    def forward(self, input_):
        world = dist.get_world_size()
        parts = [torch.empty_like(input_) for _ in range(world)]
        dist.all_gather(parts, input_.contiguous())
        total = torch.cat(parts, dim=0).view(-1, self.input_size)
        return F.linear(total, self.weight).view(-1, self.output_size_per_partition)


def get_inputs():
    return [torch.randn(SEQ // dist.get_world_size(), HIDDEN)]


def get_init_inputs():
    return [HIDDEN, OUT]
