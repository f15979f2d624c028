"""Megatron-LM's ParallelMLP with sequence parallelism and SwiGLU (KernelBench form): the
sequence-sharded hidden states are gathered (gather_from_sequence_parallel_region), go through the
column-parallel gate and up projections (ColumnParallelLinear, gather_output=False), SwiGLU, and
the row-parallel down projection (RowParallelLinear, input_is_parallel=True), whose partial sums
are reduce-scattered back to the sequence shards (reduce_scatter_to_sequence_parallel_region; gloo
has no reduce_scatter, so all_reduce and keep this rank's rows). The weights are forward() inputs
in [in, out] layout (h @ w), one gate and one up shard as Llama keeps them. Expected: tp_mlp with
act = 3 (SwiGLU)."""

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
        intermediate = F.silu(total @ gate_proj) * (total @ up_proj)  # [seq, ffn / tp]
        partial = intermediate @ down_proj  # [seq, hidden], summed over the tp ranks below
        return reduce_scatter_to_sequence_parallel_region(partial)


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(SEQ // world, HIDDEN),
            torch.randn(HIDDEN, FFN // world) / HIDDEN**0.5,
            torch.randn(HIDDEN, FFN // world) / HIDDEN**0.5,
            torch.randn(FFN // world, HIDDEN) / FFN**0.5]


def get_init_inputs():
    return []
