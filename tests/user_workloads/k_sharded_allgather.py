"""A user shards the activations along K (columns) and all-gathers them back before a GEMM with
the full weight -- not what allgather_gemm does (it shards A along M and B by columns). Expected:
stops before the first candidate, naming the sharded axis."""

import torch
import torch.distributed as dist
import torch.nn as nn

M, K, N = 32, 64, 48


class Model(nn.Module):
    def forward(self, a_cols, b):
        world = dist.get_world_size()
        parts = [torch.empty_like(a_cols) for _ in range(world)]
        dist.all_gather(parts, a_cols.contiguous())
        return torch.cat(parts, dim=1) @ b


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(M, K // world), torch.randn(K, N)]


def get_init_inputs():
    return []
