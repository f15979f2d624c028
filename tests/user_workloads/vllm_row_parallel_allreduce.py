"""vLLM style row-parallel linear (the attention output projection): each rank multiplies its
slice of the hidden dimension and the partial results are all-reduced (solution form).
Expected: gemm_allreduce without a norm."""

import torch
import torch.distributed as dist

TOKENS, HIDDEN, OUT = 32, 128, 64


def solution(x_part: torch.Tensor, w_rows: torch.Tensor) -> torch.Tensor:
    y = x_part @ w_rows
    dist.all_reduce(y)
    return y


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(TOKENS, HIDDEN // world), torch.randn(HIDDEN // world, OUT)]
