"""Megatron-LM row-parallel linear with sequence parallelism: partial products are reduce-scattered
along the sequence, so each rank keeps its block of rows (function form). Expected:
gemm_reducescatter."""

import torch
import torch.distributed as dist

SEQ, FFN, HIDDEN = 64, 128, 48


def row_parallel(x_part, w_rows, group=None):
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    partial = x_part @ w_rows
    dist.all_reduce(partial, group=group)  # gloo has no reduce_scatter: sum, then keep our rows
    rows = partial.shape[0] // world
    return partial[rank * rows:(rank + 1) * rows].contiguous()


def make_inputs(rank, world):
    return [torch.randn(SEQ, FFN // world), torch.randn(FFN // world, HIDDEN)]
