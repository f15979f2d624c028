"""Row-parallel linear where each rank keeps a fixed 64-wide slice of the hidden dimension, so the
global K grows with the world (K = 64 * world): partial products are summed across the ranks and
each rank keeps its block of rows, as sequence parallelism does (KernelBench form). Expected:
gemm_reducescatter with k = "64*n"."""

import torch
import torch.distributed as dist
import torch.nn as nn

SEQ, K_PER_RANK, HIDDEN = 64, 64, 48


class Model(nn.Module):
    def forward(self, x_part: torch.Tensor, w_rows: torch.Tensor) -> torch.Tensor:
        world, rank = dist.get_world_size(), dist.get_rank()
        partial = x_part @ w_rows
        dist.all_reduce(partial)  # gloo has no reduce_scatter: sum, then keep our rows
        rows = partial.shape[0] // world
        return partial[rank * rows:(rank + 1) * rows].contiguous()


def get_inputs():
    # this rank's slice: its width does not depend on the world size
    return [torch.randn(SEQ, K_PER_RANK), torch.randn(K_PER_RANK, HIDDEN)]


def get_init_inputs():
    return []
