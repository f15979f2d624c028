"""Megatron-LM's ParallelMLP with sequence parallelism and SwiGLU, its three weights kept as
nn.Linear keeps them ([out, in]: gate and up [FFN/n, HIDDEN], down [HIDDEN, FFN/n]) and applied
with F.linear, as ColumnParallelLinear and RowParallelLinear do (KernelBench form). Expected:
tp_mlp with act = 3 (SwiGLU), the three weights read transposed."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

SEQ, HIDDEN, FFN = 64, 96, 160  # global sizes: sequence, hidden, intermediate


def gather_from_sequence_parallel_region(x: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=0)


def reduce_scatter_to_sequence_parallel_region(x: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    x = x.contiguous()
    dist.all_reduce(x)  # gloo has no reduce_scatter: sum, then keep this rank's rows
    rows = x.shape[0] // world
    return x[rank * rows:(rank + 1) * rows].contiguous()


class Model(nn.Module):
    """One tensor-parallel rank of the MLP block."""

    def forward(self, hidden_states, gate_proj, up_proj, down_proj):
        total = gather_from_sequence_parallel_region(hidden_states)  # [seq, hidden]
        intermediate = F.silu(F.linear(total, gate_proj)) * F.linear(total, up_proj)  # [seq, ffn / tp]
        partial = F.linear(intermediate, down_proj)  # [seq, hidden], summed over the tp ranks below
        return reduce_scatter_to_sequence_parallel_region(partial)


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(SEQ // world, HIDDEN),
            torch.randn(FFN // world, HIDDEN) / HIDDEN**0.5,
            torch.randn(FFN // world, HIDDEN) / HIDDEN**0.5,
            torch.randn(HIDDEN, FFN // world) / FFN**0.5]


def get_init_inputs():
    return []
