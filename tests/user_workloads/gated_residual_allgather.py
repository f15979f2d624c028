"""A sequence-parallel block no family computes: all-gather the sequence shards, mix them with a
gated residual (sigmoid gate, tanh branch, scaled skip), then project with a weight every rank holds
whole (replicated, not the column shard all-gather + GEMM takes) and add a bias. Written as a
KernelBench-style model. Expected: no family matches; `cuco init --traced` replays it."""

import torch
import torch.distributed as dist
import torch.nn as nn

S, H, F = 32, 64, 48  # sequence (split across the ranks), hidden, output features


class Model(nn.Module):
    def forward(self, x, residual, w, b):
        world = dist.get_world_size()
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x.contiguous())
        h = torch.cat(parts, dim=0)                        # [S, H]
        gate = torch.sigmoid(h)
        mixed = gate * torch.tanh(residual) + 0.5 * h      # gated residual
        return torch.addmm(b, mixed, w)                    # [S, F], w replicated


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(S // world, H), torch.randn(S, H), torch.randn(H, F) / H ** 0.5, torch.randn(F)]


def get_init_inputs():
    return []
