"""Megatron-LM style column-parallel linear with sequence parallelism (KernelBench form): the
sequence-sharded activations are all-gathered, then multiplied by this rank's column shard of the
weight. Expected: allgather_gemm."""

import torch
import torch.distributed as dist
import torch.nn as nn

SEQ, HIDDEN, FFN = 64, 96, 128  # global sizes


class Model(nn.Module):
    def forward(self, x_shard: torch.Tensor, w_cols: torch.Tensor) -> torch.Tensor:
        world = dist.get_world_size()
        parts = [torch.empty_like(x_shard) for _ in range(world)]
        dist.all_gather(parts, x_shard.contiguous())
        return torch.cat(parts, dim=0) @ w_cols


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(SEQ // world, HIDDEN), torch.randn(HIDDEN, FFN // world)]


def get_init_inputs():
    return []
