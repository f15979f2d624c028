"""Megatron-LM style sequence parallelism after a row-parallel layer (KernelBench form): the layer's
partial output is reduce-scattered along the sequence, the residual stream is added, and the next
block's RMSNorm (eps 1e-6) is applied, its weight passed in as an input. Expected:
reducescatter_rmsnorm with the norm and the residual."""

import torch
import torch.distributed as dist
import torch.nn as nn

SEQ, HIDDEN = 64, 96  # global sizes: tokens, hidden


def reduce_scatter_to_sequence_parallel_region(input_: torch.Tensor) -> torch.Tensor:
    """Sum the ranks' partial outputs and keep this rank's block of the sequence (dim 0)."""
    world, rank = dist.get_world_size(), dist.get_rank()
    output = input_.clone()
    dist.all_reduce(output)  # gloo has no reduce_scatter: sum everything, then keep our rows
    rows = output.shape[0] // world
    return output[rank * rows:(rank + 1) * rows].contiguous()


class RMSNorm(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x.to(dtype)


class Model(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.norm = RMSNorm(eps)

    def forward(self, partial: torch.Tensor, residual: torch.Tensor, norm_weight: torch.Tensor) -> torch.Tensor:
        hidden = reduce_scatter_to_sequence_parallel_region(partial)
        hidden = hidden + residual
        return self.norm(hidden, norm_weight)


def get_inputs():
    world = dist.get_world_size()
    g = torch.Generator().manual_seed(11)  # the norm weight is the same on every rank
    return [torch.randn(SEQ, HIDDEN), torch.randn(SEQ // world, HIDDEN), 1 + 0.1 * torch.randn(HIDDEN, generator=g)]


def get_init_inputs():
    return [1e-6]
